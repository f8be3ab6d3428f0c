package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// indexOf returns the request index from the X-Request-Id header.
func indexOf(r *http.Request) int {
	id := r.Header.Get("X-Request-Id")
	n, _ := strconv.Atoi(id[strings.LastIndexByte(id, '/')+1:])
	return n
}

// gauge counts handlers in flight and keeps the maximum.
type gauge struct {
	cur, max atomic.Int64
}

func (g *gauge) enter() {
	n := g.cur.Add(1)
	for {
		m := g.max.Load()
		if n <= m || g.max.CompareAndSwap(m, n) {
			return
		}
	}
}
func (g *gauge) leave() { g.cur.Add(-1) }

func TestClosedLoop(t *testing.T) {
	checkLeaks(t)
	var g gauge
	var mu sync.Mutex
	var ids []string
	var newConns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.enter()
		defer g.leave()
		mu.Lock()
		ids = append(ids, r.Header.Get("X-Request-Id"))
		mu.Unlock()
		script(roleChunk, pause(15*time.Millisecond), contentChunk("a"), contentChunk("b"), finishChunk("stop"), usageChunk(190, 2), doneEvent)(w, r)
	}))
	// ConnState is set before Start: the server reads it from its own goroutines.
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			newConns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests, cfg.IDPrefix = 3, 20, "pilot-c3"
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range 20 {
		want = append(want, fmt.Sprintf("pilot-c3/%d", i))
	}
	sort.Strings(ids)
	sort.Strings(want)
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("request IDs the server saw (-want +got):\n%s", diff)
	}
	if got := g.max.Load(); got != 3 {
		t.Errorf("server-side max concurrency = %d, want exactly 3", got)
	}
	if res.MaxConcurrencyObserved != 3 || res.Outcomes[OK] != 20 || lines(&out) != 20 {
		t.Errorf("observed concurrency %d, ok %d, lines %d; want 3, 20, 20", res.MaxConcurrencyObserved, res.Outcomes[OK], lines(&out))
	}
	// The pool is opened before the clock and reused: 3 connections in all.
	if res.Dial.Warm != 3 || res.Dial.InBlock != 0 || newConns.Load() != 3 {
		t.Errorf("dials warm %d in-block %d, server saw %d connections; want 3, 0, 3", res.Dial.Warm, res.Dial.InBlock, newConns.Load())
	}
	if !res.Anchors.After.UTC.After(res.Anchors.Before.UTC) || res.Anchors.After.MonoMS < res.WallS*1000 {
		t.Errorf("anchors %+v do not bracket the block (wall %.3f s)", res.Anchors, res.WallS)
	}
	if res.Anchors.Before.UTC.Location() != time.UTC {
		t.Error("anchors must be UTC")
	}
}

func TestOpenLoopConstantSchedule(t *testing.T) {
	checkLeaks(t)
	srv := server(t, script(okStream(1)))
	res, recs := runConstant(t, srv.URL, 100, 4, 10)
	for _, r := range recs {
		if want := 10 * float64(r.Index); *r.ScheduledAtMS != want {
			t.Errorf("request %d scheduled at %.3f ms, want %.0f", r.Index, *r.ScheduledAtMS, want)
		}
	}
	if res.ScheduleLagMS.Samples != 10 || *res.ScheduleLagMS.P50 > 20 {
		t.Errorf("schedule lag %+v: want 10 samples and a small p50", res.ScheduleLagMS)
	}
}

// A full concurrency ceiling delays sends; the delay stays in the request's figures.
func TestOpenLoopCeilingKeepsScheduledTime(t *testing.T) {
	checkLeaks(t)
	var g gauge
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.enter()
		defer g.leave()
		script(roleChunk, pause(100*time.Millisecond), contentChunk("a"), finishChunk("stop"), usageChunk(190, 1), doneEvent)(w, r)
	}))
	cfg := testConfig(srv.URL)
	cfg.Mode, cfg.Arrival, cfg.Rate = ModeOpen, ArrivalConstant, 1000
	cfg.Concurrency, cfg.Requests = 2, 6
	var out bytes.Buffer
	if _, err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	if g.max.Load() > 2 {
		t.Errorf("server saw %d in flight, ceiling is 2", g.max.Load())
	}
	recs, _ := ReadRecords(&out)
	for _, r := range recs {
		if r.Index == 5 {
			if *r.ScheduleLagMS < 150 {
				t.Errorf("request 5 lag = %.1f ms, want ≥ 150 (waited two rounds for a slot)", *r.ScheduleLagMS)
			}
			if e2e, _ := E2EMillis(r); e2e < 250 {
				t.Errorf("request 5 e2e = %.1f ms, want ≥ 250: it is timed from its schedule", e2e)
			}
		}
	}
}

func TestPoissonArrivals(t *testing.T) {
	cfg := testConfig("http://x")
	cfg.Mode, cfg.Arrival, cfg.Rate, cfg.Requests = ModeOpen, ArrivalPoisson, 50, 4000
	a, b := arrivals(cfg), arrivals(cfg)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatal("arrivals not deterministic")
	}
	meanGap := a[len(a)-1].Seconds() / float64(len(a)-1)
	if meanGap < 0.019 || meanGap > 0.021 {
		t.Errorf("mean gap %.4f s, want 1/50 = 0.02 within 5%%", meanGap)
	}
	cfg.Repetition = 1
	if cmp.Equal(a, arrivals(cfg)) {
		t.Error("repetition does not change the schedule")
	}
}

func TestBlockBound(t *testing.T) {
	cases := map[string]struct {
		fastFirst int // requests below this index answer at once, the rest hang
		cancelCtx bool
		wantOK    int
		wantErr   error
	}{
		"bound hit with all in flight":  {fastFirst: 0, wantOK: 0, wantErr: ErrBlockBound},
		"records before the bound kept": {fastFirst: 2, wantOK: 2, wantErr: ErrBlockBound},
		"caller cancels":                {fastFirst: 1, cancelCtx: true, wantOK: 1, wantErr: context.Canceled},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if indexOf(r) < tc.fastFirst {
					script(okStream(1))(w, r)
					return
				}
				hang(roleChunk)(w, r)
			}))
			cfg := testConfig(srv.URL)
			cfg.Concurrency, cfg.Requests = 2, 7
			cfg.Timeout, cfg.RequestTimeout = 300*time.Millisecond, 0
			ctx := context.Background()
			if tc.cancelCtx {
				cfg.Timeout = 0 // only the caller's cancel ends this block
				c, cancel := context.WithCancel(ctx)
				defer cancel()
				time.AfterFunc(300*time.Millisecond, cancel)
				ctx = c
			}
			var out bytes.Buffer
			start := time.Now()
			res, err := Run(ctx, cfg, &out)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			if el := time.Since(start); el > 2*time.Second {
				t.Errorf("Run took %s past a 300 ms bound", el)
			}
			if res == nil {
				t.Fatal("no result")
			}
			recs, _ := ReadRecords(&out)
			sum := 0
			for _, n := range res.Outcomes {
				sum += n
			}
			if sum != 7 || len(recs) != 7 || res.Requests != 7 {
				t.Errorf("outcomes sum %d, records %d, requests %d; all must be 7", sum, len(recs), res.Requests)
			}
			if !res.Incomplete || res.Outcomes[OK] != tc.wantOK || res.Outcomes[Cancelled] != 7-tc.wantOK {
				t.Errorf("incomplete %v, outcomes %v; want ok %d and the rest cancelled", res.Incomplete, res.Outcomes, tc.wantOK)
			}
			inFlight, unsent := 0, 0
			for _, r := range recs {
				if r.Outcome != Cancelled {
					continue
				}
				if r.SendAtMS != nil {
					inFlight++
					if r.EndAtMS == nil {
						t.Errorf("%s: cancelled in flight without an end", r.ID)
					}
				} else {
					unsent++
				}
			}
			if inFlight != 2 {
				t.Errorf("%d cancelled in flight, want 2 (the concurrency)", inFlight)
			}
			if unsent != 5-tc.wantOK {
				t.Errorf("%d cancelled unsent, want %d", unsent, 5-tc.wantOK)
			}
		})
	}
}

// TestOutcomeIdentity mixes every failure class in one block: the outcome table
// must have every class and sum to Requests.
func TestOutcomeIdentity(t *testing.T) {
	checkLeaks(t)
	handlers := []http.HandlerFunc{
		script(okStream(2)),
		func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", 503) },
		script(roleChunk, ev(`{"error":{"message":"x"}}`), doneEvent),
		script(roleChunk, contentChunk("a")),
		script(roleChunk, contentChunk("a"), finishChunk("stop"), doneEvent),
		script(roleChunk, reasoningChunk("reasoning", "r"), finishChunk("length"), usageChunk(190, 9), doneEvent),
		hang(roleChunk),
		// A complete, visible stream whose prompt count contradicts the assertion.
		script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(191, 1), doneEvent),
	}
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handlers[indexOf(r)%len(handlers)](w, r)
	}))
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests, cfg.RequestTimeout = 3, 16, 150*time.Millisecond
	asserted := 190
	cfg.Workload.AssertPromptTokens = &asserted
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[Outcome]int{OK: 2, HTTPError: 2, StreamError: 4, MissingTerminalMetadata: 2, NoVisibleOutput: 2, Timeout: 2, Cancelled: 0, AssertionFailed: 2}
	if diff := cmp.Diff(want, res.Outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if res.VisibleSuccesses != 2 || res.VisibleSuccessRate != 2.0/16 {
		t.Errorf("visible successes %d rate %v, want 2 and 2/16", res.VisibleSuccesses, res.VisibleSuccessRate)
	}
	if res.Successes.Requests != 2 || res.Failures.Requests != 14 {
		t.Errorf("populations %d/%d, want 2 successes and 14 failures, never mixed", res.Successes.Requests, res.Failures.Requests)
	}
	// Every request that was sent has a stream end; only those that streamed a token
	// have an E2E: among the failures, the cut stream, the one without usage, the
	// reasoning-only exhaustion and the failed assertion, twice each.
	if res.Successes.StreamEndMS.Samples != 2 || res.Failures.StreamEndMS.Samples != 14 {
		t.Errorf("stream end samples %d/%d, want 2/14", res.Successes.StreamEndMS.Samples, res.Failures.StreamEndMS.Samples)
	}
	if res.Successes.E2EMS.Samples != 2 || res.Failures.E2EMS.Samples != 8 {
		t.Errorf("e2e samples %d/%d, want 2/8: only requests that streamed a token end at one", res.Successes.E2EMS.Samples, res.Failures.E2EMS.Samples)
	}
	recs, err := ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Outcome == AssertionFailed && r.Error != "usage.prompt_tokens 191, asserted 190" {
			t.Errorf("assertion failure %s says %q", r.ID, r.Error)
		}
	}
}

func TestRequestBody(t *testing.T) {
	mt, temp, topP, effort := 2048, 1.0, 0.95, "max"
	zero := 0.0
	cases := map[string]struct {
		api      string
		wl       func(*Workload)
		key      Secret
		wantPath string
		want     map[string]any // key -> value, nil value = must be absent
	}{
		"chat with sampling fields": {
			api: APIChat, key: "sk-test",
			wl:       func(w *Workload) { w.MaxTokens, w.Temperature, w.TopP, w.ReasoningEffort = &mt, &temp, &topP, &effort },
			wantPath: "/v1/chat/completions",
			want:     map[string]any{"max_tokens": 2048.0, "temperature": 1.0, "top_p": 0.95, "reasoning_effort": "max", "seed": nil, "prompt": nil},
		},
		"omitted fields stay omitted, zero is sent": {
			api:      APIChat,
			wl:       func(w *Workload) { w.Temperature = &zero },
			wantPath: "/v1/chat/completions",
			want:     map[string]any{"temperature": 0.0, "max_tokens": nil, "top_p": nil, "reasoning_effort": nil, "seed": nil},
		},
		"completions": {
			api:      APICompletions,
			wl:       func(w *Workload) {},
			wantPath: "/v1/completions",
			want:     map[string]any{"messages": nil},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var body map[string]any
			var hdr http.Header
			var path string
			srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				json.NewDecoder(r.Body).Decode(&body)
				hdr, path = r.Header.Clone(), r.URL.Path
				script(okStream(1))(w, r)
			}))
			cfg := testConfig(srv.URL + "/v1/")
			cfg.API, cfg.APIKey = tc.api, tc.key
			tc.wl(&cfg.Workload)
			if _, err := Run(context.Background(), cfg, io.Discard); err != nil {
				t.Fatal(err)
			}
			if path != tc.wantPath {
				t.Errorf("path = %q, want %q", path, tc.wantPath)
			}
			if body["stream"] != true || !cmp.Equal(body["stream_options"], map[string]any{"include_usage": true}) || body["model"] != "test-model" {
				t.Errorf("stream/stream_options/model wrong: %v %v %v", body["stream"], body["stream_options"], body["model"])
			}
			for k, v := range tc.want {
				got, present := body[k]
				if v == nil && present {
					t.Errorf("%s = %v, want it omitted", k, got)
				}
				if v != nil && !cmp.Equal(got, v) {
					t.Errorf("%s = %v, want %v", k, got, v)
				}
			}
			p, _ := cfg.CorpusID().Prompt(0)
			if tc.api == APICompletions && body["prompt"] != p.Text {
				t.Error("completions prompt is not the corpus text")
			}
			if tc.api == APIChat && len(body["messages"].([]any)) != 2 {
				t.Error("chat body lacks the corpus messages")
			}
			if hdr.Get("X-Request-Id") != "blk/0" {
				t.Errorf("X-Request-Id = %q", hdr.Get("X-Request-Id"))
			}
			if auth := hdr.Get("Authorization"); (tc.key == "" && auth != "") || (tc.key != "" && auth != "Bearer "+string(tc.key)) {
				t.Errorf("Authorization = %q with key %q", auth, string(tc.key))
			}
		})
	}
}

// The key never reaches records, results or printed config, even when the server
// echoes it back in an error body.
func TestAPIKeyNeverWritten(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if indexOf(r) == 0 {
			http.Error(w, "bad auth header: "+r.Header.Get("Authorization"), 401)
			return
		}
		script(roleChunk, ev(`{"error":{"message":"rejected `+r.Header.Get("Authorization")+`"}}`), doneEvent)(w, r)
	}))
	cfg := testConfig(srv.URL)
	cfg.APIKey, cfg.Requests = key, 2
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	resJSON, _ := json.Marshal(res)
	cfgJSON, _ := json.Marshal(cfg)
	printed := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.APIKey)
	for what, s := range map[string]string{"requests.jsonl": out.String(), "result": string(resJSON), "config json": string(cfgJSON), "printed config": printed} {
		if strings.Contains(s, key) {
			t.Errorf("%s contains the API key", what)
		}
	}
	if !strings.Contains(out.String(), "Bearer [redacted]") {
		t.Errorf("echoed key not shown as redacted: %s", out.String())
	}
}

func TestSummarizeRecomputesFromJSONL(t *testing.T) {
	srv := server(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if indexOf(r)%4 == 3 {
			http.Error(w, "x", 500)
			return
		}
		script(roleChunk, pause(5*time.Millisecond), reasoningChunk("reasoning", "r"), contentChunk("a"), pause(5*time.Millisecond), contentChunk("b"), finishChunk("stop"), usageChunk(190, 12), doneEvent)(w, r)
	}))
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests = 2, 8
	res, recs := runRecords(t, cfg)
	again := Summarize(recs)
	got := *res
	if got.BlockCPUS <= 0 {
		t.Errorf("block CPU %v s: Run must measure the process's CPU over the block clock", got.BlockCPUS)
	}
	// Anchors, dial stats and CPU time exist only where the block ran, not in records.
	got.Anchors, got.Dial, got.BlockCPUS = nil, nil, 0
	if diff := cmp.Diff(got, again); diff != "" {
		t.Errorf("Summarize(requests.jsonl) differs from Run's result (-run +summarize):\n%s", diff)
	}
	if res.Successes.TPOTMS.Samples != 6 || res.Failures.TTFOMS.Samples != 0 || res.Outcomes[HTTPError] != 2 {
		t.Errorf("tpot samples %d, failure ttfo samples %d, http errors %d", res.Successes.TPOTMS.Samples, res.Failures.TTFOMS.Samples, res.Outcomes[HTTPError])
	}
}

func TestValidateConfig(t *testing.T) {
	cases := map[string]struct {
		mut  func(*Config)
		want string
	}{
		"bad endpoint":                {func(c *Config) { c.Endpoint = "localhost:8000" }, "endpoint"},
		"zero concurrency":            {func(c *Config) { c.Concurrency = 0 }, "concurrency"},
		"open without rate":           {func(c *Config) { c.Mode = ModeOpen }, "rate"},
		"unknown arrival":             {func(c *Config) { c.Mode, c.Rate, c.Arrival = ModeOpen, 1, "bursty" }, "arrival"},
		"unknown corpus":              {func(c *Config) { c.Workload.Corpus = "natural" }, "synthetic-repeated-code, synthetic-summary"},
		"unknown api":                 {func(c *Config) { c.API = "responses" }, "api"},
		"no id prefix":                {func(c *Config) { c.IDPrefix = "" }, "id prefix"},
		"unknown lane":                {func(c *Config) { c.Lane = "warmup" }, `lane "warmup"`},
		"bad cell":                    {func(c *Config) { c.Cell = "four" }, `cell "four"`},
		"corpus and zero concurrency": {func(c *Config) { c.Concurrency, c.Workload.Prefixes = 0, "warm" }, `unknown prefixes mode "warm"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cfg := testConfig("http://127.0.0.1:1")
			tc.mut(&cfg)
			res, err := Run(context.Background(), cfg, io.Discard)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) || res != nil {
				t.Errorf("err = %v, want ErrConfig mentioning %q and no result", err, tc.want)
			}
		})
	}
}

func TestWarmupFailureSendsNothing(t *testing.T) {
	srv := server(t, script(okStream(1)))
	url := srv.URL
	srv.Close()
	var out bytes.Buffer
	res, err := Run(context.Background(), testConfig(url), &out)
	if !errors.Is(err, ErrWarmup) || res != nil || out.Len() != 0 {
		t.Errorf("err = %v, result %v, %d bytes written; want ErrWarmup and nothing else", err, res, out.Len())
	}
}

// OnStart marks the first request: it is called once, after every connection was
// dialled (setup) and before any request reached the server.
func TestOnStartComesBeforeTheFirstRequest(t *testing.T) {
	checkLeaks(t)
	var reached atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(10, 1), doneEvent)(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests = 2, 6
	calls, seenAtStart := 0, int64(-1)
	cfg.OnStart = func() { calls++; seenAtStart = reached.Load() }
	if _, err := Run(context.Background(), cfg, nil); err != nil {
		t.Fatal(err)
	}
	if calls != 1 || seenAtStart != 0 || reached.Load() != 6 {
		t.Fatalf("OnStart called %d time(s) with %d request(s) already at the server; want once, before any (server saw %d in all)", calls, seenAtStart, reached.Load())
	}
}

// A block of 88 successes certifies its TTFT p50 (from 11 samples) but not its p95
// (130) or p99 (662): result.json names exactly those two as descriptive.
func TestResultMarksEachPercentileDescriptive(t *testing.T) {
	srv := server(t, script(roleChunk, contentChunk("a"), contentChunk("b"), finishChunk("stop"), usageChunk(190, 2), doneEvent))
	cfg := testConfig(srv.URL)
	cfg.Concurrency, cfg.Requests = 8, 88
	res, err := Run(context.Background(), cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Successes struct {
			TTFT struct {
				Samples     int      `json:"samples"`
				Descriptive bool     `json:"descriptive"`
				Which       []string `json:"descriptive_percentiles"`
			} `json:"ttft_ms"`
		} `json:"successes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Successes.TTFT
	if d.Samples != 88 || !d.Descriptive || !slices.Equal(d.Which, []string{"p95", "p99"}) {
		t.Errorf("ttft_ms: %d samples, descriptive %v %v; want 88, true [p95 p99]", d.Samples, d.Descriptive, d.Which)
	}
}
