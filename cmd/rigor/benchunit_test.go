package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
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
