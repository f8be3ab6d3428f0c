package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/steps"
)

func TestParetoFront(t *testing.T) {
	cases := map[string]struct {
		pts  []point
		want []bool
	}{
		// Throughput rises with latency until c16 saturates: c64 has less throughput
		// at more latency than c16, so only c64 is off the front.
		"saturation": {[]point{{10, 100, true}, {20, 350, true}, {60, 900, true}, {200, 850, true}}, []bool{true, true, true, false}},
		// Equal on both: neither beats the other.
		"ties": {[]point{{10, 100, true}, {10, 100, true}}, []bool{true, true}},
		// Same throughput at more latency is dominated.
		"same throughput, slower": {[]point{{10, 100, true}, {12, 100, true}}, []bool{true, false}},
		// A level without the latency is never on the front and dominates nothing.
		"missing latency": {[]point{{0, 1000, false}, {10, 100, true}}, []bool{false, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, paretoFront(tc.pts)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseGoodput(t *testing.T) {
	cases := map[string]struct {
		in      string
		want    []steps.LoadSLO
		wantErr string
	}{
		"durations":         {"ttft:200ms,tpot:50ms", []steps.LoadSLO{{Metric: "ttft", MaxMS: 200}, {Metric: "tpot", MaxMS: 50}}, ""},
		"bare milliseconds": {"e2el:1500, ttfo:0.5", []steps.LoadSLO{{Metric: "e2e", MaxMS: 1500}, {Metric: "ttfo", MaxMS: 0.5}}, ""},
		"seconds":           {"e2e:2s", []steps.LoadSLO{{Metric: "e2e", MaxMS: 2000}}, ""},
		"empty":             {"", nil, ""},
		"twice":             {"ttft:1,ttft:2", nil, "ttft given twice"},
		"zero":              {"ttft:0ms", nil, `ttft bound "0ms": want > 0`},
		"not a bound":       {"ttft:fast", nil, `ttft bound "fast": want a duration such as 200ms or a number of milliseconds`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseGoodput(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestWarmupSendsOtherInputs: warm-up requests send the prompts after the measured
// ones, so a prefix cache they warm holds nothing the measured requests send.
func TestWarmupSendsOtherInputs(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	var mu sync.Mutex
	sent := map[string]string{} // request ID -> prompt
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		sent[r.Header.Get("X-Request-Id")] = body.Messages[0].Content
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`+"\n\n"+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	prompts := filepath.Join(dir, "p.jsonl")
	os.WriteFile(prompts, []byte("{\"prompt\":\"p0\"}\n{\"prompt\":\"p1\"}\n{\"prompt\":\"p2\"}\n{\"prompt\":\"p3\"}\n"), 0o644)
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--endpoint", srv.URL, "--model", "m", "--requests", "2", "--max-tokens", "4", "--warmup-requests", "2",
		"--dataset-name", "prompts", "--dataset-path", prompts, "--out", filepath.Join(dir, "out")}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	want := map[string]string{"bench/0": "p0", "bench/1": "p1", "bench-warmup/0": "p2", "bench-warmup/1": "p3"}
	if diff := cmp.Diff(want, sent); diff != "" {
		t.Errorf("prompts by request (-want +got):\n%s", diff)
	}
}

// TestSecondInterruptExits: the first interrupt of a bench cancels it; the second
// exits at once with 130. It runs in a child process, which the exit ends.
func TestSecondInterruptExits(t *testing.T) {
	if os.Getenv("RIGOR_TEST_INTERRUPTS") == "1" {
		g := &globals{stderr: os.Stderr, logFormat: "console", logLevel: "info"}
		if err := g.setupLog(); err != nil {
			panic(err)
		}
		ctx, stop := watchInterrupts(g, benchInterrupts)
		defer stop()
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		<-ctx.Done()
		syscall.Kill(os.Getpid(), syscall.SIGINT)
		time.Sleep(10 * time.Second)
		os.Exit(0) // not reached when the second interrupt exits
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondInterruptExits$")
	cmd.Env = append(os.Environ(), "RIGOR_TEST_INTERRUPTS=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("child ended with %v, want exit %d:\n%s", err, exitInterrupted, stderr.String())
	}
	for _, want := range []string{"received: stopping; requests in flight are cancelled and every record taken so far is written. Interrupt again to exit at once.", "exiting at once; the records of requests in flight are lost"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
}

// TestRecentCalibration: a bench records the last calibration only when this host ran
// it within the hour, and says why otherwise.
func TestRecentCalibration(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	host, _ := os.Hostname()
	p99 := 0.25
	write := func(m calibrationMemo) {
		path, _ := calibrationPath()
		os.MkdirAll(filepath.Dir(path), 0o755)
		b, _ := json.Marshal(m)
		os.WriteFile(path, b, 0o644)
	}
	if c, note := recentCalibration(now); c != nil || !strings.Contains(note, "no calibration in the last hour: run `rigor calibrate`") {
		t.Errorf("none: %v %q", c, note)
	}
	write(calibrationMemo{At: now.Add(-59 * time.Minute), Host: host, Concurrency: 4, TTFTErrorP99MS: &p99})
	if c, note := recentCalibration(now); c == nil || c.AgeS != 59*60 || *c.TTFTErrorP99MS != 0.25 || c.Concurrency != 4 {
		t.Errorf("59 min old: %+v %q", c, note)
	}
	write(calibrationMemo{At: now.Add(-61 * time.Minute), Host: host})
	if c, note := recentCalibration(now); c != nil || !strings.Contains(note, "the last calibration is 1h1m0s old, more than an hour") {
		t.Errorf("61 min old: %v %q", c, note)
	}
	write(calibrationMemo{At: now.Add(-time.Minute), Host: "elsewhere"})
	if c, note := recentCalibration(now); c != nil || !strings.Contains(note, `is from host "elsewhere", not this one`) {
		t.Errorf("other host: %v %q", c, note)
	}
}

// TestBenchSendsWhatItsFlagsSay: the sampling flags reach the request body, the key
// named by --api-key-env reaches the Authorization header, --corpus and
// --prefixes choose the prompts (the workload digest is that corpus's), and
// --request-timeout ends a request the server holds too long as a timeout.
func TestBenchSendsWhatItsFlagsSay(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	const key = "sk-bench-flags-0123"
	t.Setenv("BENCH_FLAGS_KEY", key)
	var mu sync.Mutex
	var bodies []map[string]any
	var auths []string
	hold := make(chan struct{})
	defer close(hold)
	var slow bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		bodies, auths = append(bodies, body), append(auths, r.Header.Get("Authorization"))
		s := slow
		mu.Unlock()
		if s {
			select {
			case <-hold:
			case <-r.Context().Done():
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`+"\n\n"+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--endpoint", srv.URL, "--model", "m", "--requests", "2", "--max-tokens", "8",
		"--temperature", "0.7", "--top-p", "0.9", "--seed", "42", "--api-key-env", "BENCH_FLAGS_KEY",
		"--corpus", "synthetic-repeated-code", "--prefixes", "repeated", "--nominal-context", "512", "--out", dir}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if len(bodies) != 2 {
		t.Fatalf("%d requests reached the server, want 2", len(bodies))
	}
	for i, b := range bodies {
		if b["temperature"] != 0.7 || b["top_p"] != 0.9 || b["seed"] != 42.0 || b["max_tokens"] != 8.0 {
			t.Errorf("request %d: temperature %v, top_p %v, seed %v, max_tokens %v; want 0.7, 0.9, 42, 8", i, b["temperature"], b["top_p"], b["seed"], b["max_tokens"])
		}
		if auths[i] != "Bearer "+key {
			t.Errorf("request %d: Authorization %q, want the key --api-key-env names", i, auths[i])
		}
	}
	var res benchResult
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, "result.json"))), &res); err != nil {
		t.Fatal(err)
	}
	cfg := steps.LoadConfig{Concurrency: 1, Workload: steps.LoadWorkload{Corpus: "synthetic-repeated-code", CorpusSeed: 4342, NominalContext: 512, Prefixes: "repeated"}}
	if want, err := steps.LoadDigest(steps.LoadCorpusSource{ID: cfg.CorpusID()}, 2); err != nil || res.Bench.Workload.SHA256 != want {
		t.Errorf("workload sha256 %s, want the repeated-code corpus with repeated prefixes %s (%v)", res.Bench.Workload.SHA256, want, err)
	}

	// Unset, the sampling fields are omitted, and --corpus-seed (prompt content) is
	// never sent as the API's seed.
	code = run([]string{"bench", "--endpoint", srv.URL, "--model", "m", "--requests", "1", "--max-tokens", "8",
		"--corpus-seed", "9", "--out", t.TempDir()}, &stdout, &stderr)
	if code != 0 || len(bodies) != 3 {
		t.Fatalf("exit %d, %d requests: %s", code, len(bodies), stderr.String())
	}
	for _, field := range []string{"temperature", "top_p", "seed", "reasoning_effort", "min_tokens"} {
		if v, ok := bodies[2][field]; ok {
			t.Errorf("%s sent as %v although no flag set it", field, v)
		}
	}

	mu.Lock()
	slow = true
	mu.Unlock()
	stdout.Reset()
	start := time.Now()
	code = run([]string{"bench", "--endpoint", srv.URL, "--model", "m", "--requests", "1", "--max-tokens", "8",
		"--request-timeout", "300ms", "--json", "--out", t.TempDir()}, &stdout, &stderr)
	var js struct {
		Outcomes map[string]int `json:"outcomes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &js); err != nil || js.Outcomes["timeout"] != 1 {
		t.Errorf("exit %d, outcomes %v (%v); want the held request ended as a timeout", code, js.Outcomes, err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("a request held by the server took the bench %s with --request-timeout 300ms", took)
	}
}

// TestFailedWarmupIsNoFailure: warm-up requests that fail leave the exit status
// to the measured ones (README's exit code 7: "warm-up requests aside"); the
// warm-up line says how many were ok.
func TestFailedWarmupIsNoFailure(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if strings.HasPrefix(r.Header.Get("X-Request-Id"), "bench-warmup/") {
			http.Error(w, `{"error":{"message":"warming up"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"content":"x"},"finish_reason":"stop"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`+"\n\n"+"data: [DONE]\n\n")
	}))
	defer srv.Close()
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--endpoint", srv.URL, "--model", "m", "--requests", "3", "--max-tokens", "4", "--warmup-requests", "2",
		"--out", t.TempDir()}, &stdout, &stderr)
	if code != 0 {
		t.Errorf("exit %d with failed warm-ups and measured requests all ok; want 0\n%s%s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "warm-up: 2 requests (0 ok)") || !regexp.MustCompile(`ok +3\n`).MatchString(stdout.String()) {
		t.Errorf("stdout:\n%s", stdout.String())
	}
}
