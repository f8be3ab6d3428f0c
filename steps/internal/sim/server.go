package sim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

// maxRequestBytes bounds a request body; 32 MiB is far above any 1M-token prompt of short words.
const maxRequestBytes = 32 << 20

// IncarnationHeader carries, on every response, the identity of the server that
// answered (Config.Incarnation), so a client can tell when another server took over
// the endpoint: a restart, or another stack on the same port.
const IncarnationHeader = "X-Rigor-Incarnation"

// Server is the simulated OpenAI-compatible endpoint. It is an http.Handler, so it can be
// served by Listen, by httptest, or mounted in a larger mux.
type Server struct {
	cfg    Config
	eng    *engine
	m      *metrics
	faults atomic.Pointer[Faults]
	mux    *http.ServeMux
	reqSeq atomic.Uint64
	// profiling counts the simulated Nsight captures running (kernels.go): requests
	// that arrive meanwhile carry the observer's overhead.
	profiling atomic.Int32
	// incarnation is the IncarnationHeader value, built once: the header costs one
	// map assignment per response.
	incarnation []string

	// Close must wait for handlers, including hung ones; done releases them and the
	// closed flag stops new ones from joining the WaitGroup after Wait began.
	mu       sync.Mutex
	closed   bool
	handlers sync.WaitGroup
	done     chan struct{}
	// closing is canceled with done, so that a streaming exchange can wait on one
	// context for its client and for Close together.
	closing     context.Context
	cancelClose context.CancelFunc
}

var _ http.Handler = (*Server)(nil)

// NewServer checks cfg and builds a server; nothing listens until it is served.
func NewServer(cfg Config) (*Server, error) {
	cfg, err := cfg.normalized()
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	m := newMetrics()
	s := &Server{cfg: cfg, m: m, eng: newEngine(cfg.Profile, cfg.TimeScale, m), done: make(chan struct{})}
	s.closing, s.cancelClose = context.WithCancel(context.Background())
	if cfg.Incarnation == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.Incarnation = fmt.Sprintf("sim-%s@%s", hex.EncodeToString(b[:]), time.Now().UTC().Format(time.RFC3339Nano))
		s.cfg.Incarnation = cfg.Incarnation
	}
	s.incarnation = []string{cfg.Incarnation}
	f := cfg.Faults
	s.faults.Store(&f)
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", s.tracked(func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, true) }))
	s.mux.HandleFunc("POST /v1/completions", s.tracked(func(w http.ResponseWriter, r *http.Request) { s.serveCompletion(w, r, false) }))
	s.mux.HandleFunc("GET /metrics", s.serveMetrics)
	s.mux.HandleFunc("GET /health", s.serveHealth)
	s.mux.HandleFunc("GET /v1/models", s.serveModels)
	s.mux.HandleFunc("POST /debug/scheduler-trace", s.tracked(s.serveSchedulerTrace))
	s.mux.HandleFunc("POST /debug/nsys-profile", s.tracked(s.serveNsysProfile))
	s.mux.HandleFunc("/debug/faults", s.serveFaults) // admin.go
	s.mux.HandleFunc("POST "+expositions[cfg.Engine].resetPath, s.serveCacheReset)
	return s, nil
}

// ServeHTTP implements http.Handler. Every response, errors and streams included,
// names the incarnation that answered.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()[IncarnationHeader] = s.incarnation
	s.mux.ServeHTTP(w, r)
}

// Config returns the normalized configuration the server runs with.
func (s *Server) Config() Config { return s.cfg }

// SetFaults replaces the fault injection for requests that arrive from now on.
func (s *Server) SetFaults(f Faults) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	s.faults.Store(&f)
	return nil
}

// Faults returns the fault injection in force.
func (s *Server) Faults() Faults { return *s.faults.Load() }

// Stats is a snapshot of the engine's state, beyond what /metrics shows.
type Stats struct {
	Running              int
	Waiting              int
	KVReservedTokens     int
	PrefixCacheTokens    int   // tokens the prefix cache holds
	PrefixCacheEvictions int64 // blocks evicted since start
	GeneratedTokens      int64 // tokens sent since start
	// TokenFlushes counts the writes that carried tokens. GeneratedTokens/TokenFlushes is
	// the mean number of tokens per write: above TokensPerChunk, the server fell behind
	// its schedule and coalesced chunks that were already due.
	TokenFlushes int64
}

// Stats returns a consistent snapshot of the engine.
func (s *Server) Stats() Stats {
	s.eng.mu.Lock()
	defer s.eng.mu.Unlock()
	return Stats{
		Running:              int(s.eng.running.Load()),
		Waiting:              s.eng.waiting.Len(),
		KVReservedTokens:     s.eng.kvReserved,
		PrefixCacheTokens:    s.eng.cache.usedTokens(),
		PrefixCacheEvictions: s.eng.cache.evictions,
		GeneratedTokens:      s.m.generationTokens.Load(),
		TokenFlushes:         s.m.flushes.Load(),
	}
}

// Close ends every in-flight request (hung ones included; their clients see the
// connection end without [DONE]) and returns once all handlers have returned. Requests
// arriving afterwards get 503.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.done)
		s.cancelClose()
	}
	s.mu.Unlock()
	s.handlers.Wait()
}

func (s *Server) tracked(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down")
			return
		}
		s.handlers.Add(1)
		s.mu.Unlock()
		defer s.handlers.Done()
		h(w, r)
	}
}

func (s *Server) serveHealth(w http.ResponseWriter, r *http.Request) {
	if s.faults.Load().Unhealthy {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID          string `json:"id"`
		Object      string `json:"object"`
		Created     int64  `json:"created"`
		OwnedBy     string `json:"owned_by"`
		MaxModelLen int    `json:"max_model_len"`
	}
	body := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{s.cfg.ModelName, "model", time.Now().Unix(), "rigor-sim", s.cfg.Profile.MaxModelLen}}}
	writeJSON(w, http.StatusOK, body)
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	// A write error means the scraper went away; there is no one left to tell.
	_ = s.m.writeExposition(w, s.cfg.Engine, s.cfg.ModelName, s.eng.running.Load(), s.cfg.Profile.KVCapacityTokens)
}

// serveCacheReset empties the prefix cache, as vLLM's POST /reset_prefix_cache and
// SGLang's POST /flush_cache do. Like SGLang's flush, it refuses while requests are
// running or waiting: their blocks are in use, and a reset under load would make the
// cache state of the requests in flight depend on timing.
func (s *Server) serveCacheReset(w http.ResponseWriter, r *http.Request) {
	if n := s.eng.resetCache(); n > 0 {
		what := fmt.Sprintf("%d requests are", n)
		if n == 1 {
			what = "1 request is"
		}
		writeError(w, http.StatusBadRequest, "BadRequestError", "prefix cache not reset: "+what+" running or waiting")
		return
	}
	w.WriteHeader(http.StatusOK)
}

// apiError is an OpenAI-style error, which vLLM sends with the same status code in "code".
type apiError struct {
	status int
	kind   string
	msg    string
}

func (e *apiError) Error() string { return e.msg }

func badRequest(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "BadRequestError", fmt.Sprintf(format, args...)}
}

func writeError(w http.ResponseWriter, status int, kind, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": msg, "type": kind, "param": nil, "code": status}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// wireRequest is the subset of the OpenAI request body the simulator understands.
type wireRequest struct {
	Model         string          `json:"model"`
	Messages      []wireMessage   `json:"messages"`
	Prompt        json.RawMessage `json:"prompt"`
	Stream        bool            `json:"stream"`
	StreamOptions *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	MaxTokens           *int     `json:"max_tokens"`
	MaxCompletionTokens *int     `json:"max_completion_tokens"`
	Temperature         *float64 `json:"temperature"`
	TopP                *float64 `json:"top_p"`
	Seed                *int64   `json:"seed"`
	ReasoningEffort     string   `json:"reasoning_effort"`
	// vLLM's and SGLang's extra sampling parameters for a fixed output length.
	MinTokens *int `json:"min_tokens"`
	IgnoreEOS bool `json:"ignore_eos"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// prepared is a validated request, ready for the engine.
type prepared struct {
	chat         bool
	requestID    string
	stream       bool
	includeUsage bool
	// continuousUsage puts usage on every streamed chunk (stream_options
	// continuous_usage_stats, as vLLM and SGLang do).
	continuousUsage bool
	promptTokens    int
	blocks          []uint64
	maxTokens       int
	plan            requestPlan
}

func (s *Server) prepare(r *http.Request, chat bool, faults Faults) (*prepared, *apiError) {
	var req wireRequest
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxRequestBytes))
	if err := dec.Decode(&req); err != nil {
		return nil, badRequest("invalid JSON body: %v", err)
	}
	if req.Model != "" && req.Model != s.cfg.ModelName {
		return nil, &apiError{http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", req.Model)}
	}
	if t := req.Temperature; t != nil && (*t < 0 || *t > 2) {
		return nil, badRequest("temperature must be in [0, 2], got %g", *t)
	}
	if p := req.TopP; p != nil && (*p <= 0 || *p > 1) {
		return nil, badRequest("top_p must be in (0, 1], got %g", *p)
	}

	var toks []string
	key := ""
	if chat {
		if len(req.Messages) == 0 {
			return nil, badRequest("messages must not be empty")
		}
		for _, m := range req.Messages {
			text, err := messageText(m.Content)
			if err != nil {
				return nil, badRequest("message content: %v", err)
			}
			toks = append(toks, "<|"+m.Role+"|>")
			toks = append(toks, tokens.Split(text)...)
			key += m.Role + "\x00" + text + "\x00"
		}
		toks = append(toks, "<|assistant|>")
	} else {
		var prompt string
		if err := json.Unmarshal(req.Prompt, &prompt); err != nil {
			var list []string
			if err2 := json.Unmarshal(req.Prompt, &list); err2 != nil || len(list) != 1 {
				return nil, badRequest("prompt must be a string (or a list of exactly one string)")
			}
			prompt = list[0]
		}
		toks = tokens.Split(prompt)
		key = prompt
	}
	promptTokens := len(toks)
	limit := s.cfg.Profile.MaxModelLen
	if promptTokens >= limit {
		return nil, badRequest("This model's maximum context length is %d tokens. However, your prompt has %d tokens.", limit, promptTokens)
	}
	maxTokens := limit - promptTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	}
	if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	if maxTokens < 1 {
		return nil, badRequest("max_tokens must be at least 1, got %d", maxTokens)
	}
	minTokens := 0
	if req.MinTokens != nil {
		minTokens = *req.MinTokens
		if minTokens < 0 || minTokens > maxTokens {
			return nil, badRequest("min_tokens must be less than or equal to max_tokens=%d, got %d.", maxTokens, minTokens)
		}
	}
	if promptTokens+maxTokens > limit {
		return nil, badRequest("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
			limit, promptTokens+maxTokens, promptTokens, maxTokens)
	}

	id := r.Header.Get("X-Request-Id")
	if id != "" {
		key = requestIDKey(id)
	} else {
		key = "prompt\x00" + key + "\x00" + strconv.Itoa(maxTokens) + "\x00" + req.ReasoningEffort
		id = "sim-" + strconv.FormatUint(s.reqSeq.Add(1), 10)
	}
	if req.Seed != nil {
		key += "\x00seed=" + strconv.FormatInt(*req.Seed, 10)
	}
	plan, err := planRequest(s.cfg.Profile, faults, seedFor(s.cfg.Seed, key), maxTokens, req.ReasoningEffort, chat,
		lengthRequest{minTokens: minTokens, ignoreEOS: req.IgnoreEOS})
	if err != nil {
		return nil, badRequest("%v", err)
	}
	return &prepared{
		chat:            chat,
		requestID:       id,
		stream:          req.Stream,
		includeUsage:    !req.Stream || (req.StreamOptions != nil && req.StreamOptions.IncludeUsage),
		continuousUsage: req.Stream && req.StreamOptions != nil && req.StreamOptions.ContinuousUsageStats,
		promptTokens:    promptTokens,
		blocks:          hashBlocks(toks, s.cfg.Profile.BlockSize),
		maxTokens:       maxTokens,
		plan:            plan,
	}, nil
}

// messageText accepts a string, null, or a list of {"type":"text","text":...} parts,
// which it joins with spaces so that parts never merge into one token.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or a list of text parts")
	}
	out := ""
	for i, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported", p.Type)
		}
		if i > 0 {
			out += " "
		}
		out += p.Text
	}
	return out, nil
}

// requestIDKey is the RNG key of a request that carries an X-Request-Id; Predict uses it
// too, so that its request i draws exactly what a live request "predict-<i>" draws.
func requestIDKey(id string) string { return "id\x00" + id }
