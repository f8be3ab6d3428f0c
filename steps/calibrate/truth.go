package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// TruthPath is where a TruthServer answers with its per-request truth as JSON.
const TruthPath = "/calibration/truth"

// RequestTruth is what the server did for one request, in Unix nanoseconds of its
// own clock: when the request arrived, when its handler was entered, and when the
// first and last token-bearing chunks were flushed.
type RequestTruth struct {
	// RecvNS is the arrival of the request's first bytes: the kernel receive
	// timestamp (SO_TIMESTAMPNS) of the socket read that returned them, or, where the
	// kernel gives none, the clock right after that read (RecvSource says which).
	// Zero when the request was not seen by the listener (then HandlerNS stands in).
	RecvNS     int64  `json:"recv_ns"`
	RecvSource string `json:"recv_source,omitempty"`
	// HandlerNS is when the HTTP handler was entered: after the server parsed the
	// request and after any wait for a goroutine. HandlerNS - RecvNS is the server's
	// own queueing, which the truth must include and the client cannot see.
	HandlerNS int64 `json:"handler_ns"`
	FirstNS   int64 `json:"first_ns"`
	LastNS    int64 `json:"last_ns"`
	Chunks    int   `json:"chunks"`
	Tokens    int   `json:"tokens"`
}

// Arrival sources of RequestTruth.RecvSource.
const (
	RecvKernel = "kernel"  // SO_TIMESTAMPNS of the read that returned the first bytes
	RecvRead   = "read"    // the server's clock right after that read
	RecvNone   = "handler" // not seen by the listener: handler entry stands in
)

// Truth collects RequestTruth by request ID. It is safe for concurrent use.
type Truth struct {
	mu   sync.Mutex
	reqs map[string]*RequestTruth
}

// NewTruth returns an empty Truth.
func NewTruth() *Truth { return &Truth{reqs: map[string]*RequestTruth{}} }

func (t *Truth) entry(id string) *RequestTruth {
	r := t.reqs[id]
	if r == nil {
		r = &RequestTruth{}
		t.reqs[id] = r
	}
	return r
}

// Received records that the server's handler for request id was entered at at.
func (t *Truth) Received(id string, at time.Time) {
	ns := at.UnixNano()
	t.mu.Lock()
	t.entry(id).HandlerNS = ns
	t.mu.Unlock()
}

// Arrived records the arrival of request id's first bytes at ns (Unix nanoseconds).
func (t *Truth) Arrived(id string, ns int64, source string) {
	t.mu.Lock()
	r := t.entry(id)
	r.RecvNS, r.RecvSource = ns, source
	t.mu.Unlock()
}

// Chunk is a sim.Config.OnChunk callback.
func (t *Truth) Chunk(id string, index, tokens int, sentAt time.Time) {
	ns := sentAt.UnixNano()
	t.mu.Lock()
	r := t.entry(id)
	if r.Chunks == 0 || ns < r.FirstNS {
		r.FirstNS = ns
	}
	if ns > r.LastNS {
		r.LastNS = ns
	}
	r.Chunks++
	r.Tokens += tokens
	t.mu.Unlock()
}

// Snapshot copies the truth gathered so far.
func (t *Truth) Snapshot() map[string]RequestTruth {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]RequestTruth, len(t.reqs))
	for k, v := range t.reqs {
		out[k] = *v
	}
	return out
}

// Schedule is the exact token schedule of the calibration server.
type Schedule struct {
	// TPOT is the fixed time between two output tokens of a request.
	TPOT time.Duration
	// FirstToken is the time from admission to the first token (the simulator's fixed
	// prefill cost; prompts cost nothing on top).
	FirstToken time.Duration
	// MaxRunning bounds the running batch; it must be at least the client's
	// concurrency, or requests queue and the schedule is no longer exact.
	MaxRunning int
}

// SimConfig is the simulator configuration of an exact schedule: no jitter, no batch
// slope, no prefix cache, and a natural output length far beyond any max_tokens, so
// every request streams exactly max_tokens content tokens (with reasoning_effort
// "none") and ends with finish_reason "length".
func (s Schedule) SimConfig() sim.Config {
	p, _ := sim.LookupProfile("incumbent")
	p.Name = "calibration"
	p.ServedModelName = "rigor-calibration"
	p.PrefillBase = s.FirstToken
	p.PrefillTokensPerSecond = 1e12
	p.PrefillSlowdownPerRunning = 0
	p.PrefillJitter = 0
	p.TPOTBase = s.TPOT
	p.TPOTPerRunning = 0
	p.TokenJitter = 0
	p.MaxRunning = max(s.MaxRunning, 1)
	p.MaxModelLen = 1 << 24
	p.KVCapacityTokens = 1 << 40
	p.OutputMedianTokens = 1e9
	p.OutputSigma = 0
	return sim.Config{Profile: p, TimeScale: 1, PrefixCacheTokens: -1, TokensPerChunk: 1}
}

// TruthServer is the simulator on a real socket, recording the truth of every request.
type TruthServer struct {
	Truth *Truth
	srv   *sim.Server
	http  *http.Server
	ln    net.Listener
	done  chan struct{}
}

// ListenTruth starts an exact-schedule simulator on addr ("127.0.0.1:0" picks a port).
// Besides the simulator's routes it answers GET TruthPath with the truth so far.
func ListenTruth(addr string, s Schedule) (*TruthServer, error) {
	t := NewTruth()
	cfg := s.SimConfig()
	cfg.OnChunk = t.Chunk
	srv, err := sim.NewServer(cfg)
	if err != nil {
		return nil, err
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("calibrate: listen on %s: %w", addr, err)
	}
	// Every accepted connection stamps the arrival of each request it carries.
	ln := &arrivalListener{Listener: tcp, truth: t}
	ts := &TruthServer{Truth: t, srv: srv, ln: ln, done: make(chan struct{})}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			// Handler entry, for the record: the truth's start is the arrival
			// stamped by the listener, before any of the server's queueing.
			if id := r.Header.Get("X-Request-Id"); id != "" {
				t.Received(id, time.Now())
			}
			srv.ServeHTTP(w, r)
			return
		}
		if r.URL.Path == TruthPath {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(t.Snapshot())
			return
		}
		srv.ServeHTTP(w, r)
	})
	ts.http = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(ts.done)
		_ = ts.http.Serve(ln)
	}()
	return ts, nil
}

// URL is the server's base URL.
func (ts *TruthServer) URL() string { return "http://" + ts.ln.Addr().String() }

// Model is the model name the server answers to.
func (ts *TruthServer) Model() string { return ts.srv.Config().ModelName }

// Close stops the server and waits for every handler.
func (ts *TruthServer) Close() error {
	err := ts.http.Close()
	ts.srv.Close()
	<-ts.done
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
