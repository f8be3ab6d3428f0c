package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps"
)

// TestBenchAgainstSimulator runs `rigor bench` end to end against the simulator: the
// table names every figure with its n and the descriptive mark, the outcome table
// sums to the requests, stdout carries nothing but results, and the files match their
// schemas. With --json, stdout is result.json itself.
func TestBenchAgainstSimulator(t *testing.T) {
	url := benchSim(t, 0.02)
	dir := t.TempDir()
	args := []string{"bench", "--endpoint", url, "--model", "m", "--concurrency", "3", "--requests", "9",
		"--max-tokens", "96", "--reasoning-effort", "low", "--nominal-context", "512", "--goodput", "e2e:1m", "--out", dir}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	// TPOT may have fewer samples: a request whose tokens all came in one socket read
	// has no generation duration, so no capacity TPOT.
	for _, re := range []string{
		// 9 samples certify no percentile: p50 needs 11.
		`TTFO +9 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+\* +[0-9.]+\* +[0-9.]+\* +[0-9.]+\* +[0-9.]+`,
		`TTFT \(visible\) +9 `, `TPOT +[1-9] `, `E2E +9 `, `ITL +[0-9]+ `,
		`\* over fewer samples than certify the percentile \(one-sided 99%: 11 for p50, 64 for p90, 130 for p95, 662 for p99\): descriptive only`,
		`ok +9\n`, `cancelled +0\n`, `assertion_failed +0\n`,
		`visible successes / attempted: 9/9 \(100.0%\)`,
		`output token throughput +[0-9]+ tok/s`,
		`goodput \(e2e <= 1m0s\) +[0-9.]+ req/s +\(9 of 9 attempted met every SLO: 100.0%\)`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout lacks %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "INF") {
		t.Errorf("log lines on stdout:\n%s", out)
	}
	b := must(os.ReadFile(filepath.Join(dir, "result.json")))
	if err := schemas.Validate("result", b); err != nil {
		t.Errorf("result.json: %v", err)
	}
	var res benchResult
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// Self-describing: version, settings (defaults too), the corpus digest, the machine.
	bi := res.Bench
	if bi.Rigor != buildVersion() || bi.Settings["concurrency"] != "3" || bi.Settings["timeout"] != "10m0s" || bi.Settings["percentiles"] != "50,90,95,99" ||
		len(bi.Workload.SHA256) != 64 || bi.Workload.Source.Kind != "corpus" || bi.Machine.CPUs < 1 || bi.Endpoint != url || bi.Model != "m" {
		t.Errorf("bench section %+v", bi)
	}
	// The README's "CPU model, kernel", where Linux says them.
	if rel, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil && bi.Machine.Kernel != strings.TrimSpace(string(rel)) {
		t.Errorf("machine kernel %q, /proc/sys/kernel/osrelease says %q", bi.Machine.Kernel, rel)
	}
	if info, err := os.ReadFile("/proc/cpuinfo"); err == nil && strings.Contains(string(info), "model name") &&
		(bi.Machine.CPUModel == "" || !strings.Contains(string(info), bi.Machine.CPUModel)) {
		t.Errorf("machine cpu_model %q is not /proc/cpuinfo's model name", bi.Machine.CPUModel)
	}
	// The digest is the corpus digest the block step would pin for this cell.
	cfg := steps.LoadConfig{Concurrency: 3, Workload: steps.LoadWorkload{Corpus: "synthetic-summary", CorpusSeed: 4342, NominalContext: 512, Prefixes: "unique"}}
	if want, err := steps.LoadDigest(steps.LoadCorpusSource{ID: cfg.CorpusID()}, 9); err != nil || bi.Workload.SHA256 != want {
		t.Errorf("workload sha256 %s, corpus digest %s (%v)", bi.Workload.SHA256, want, err)
	}
	lines := bytes.Split(bytes.TrimSpace(must(os.ReadFile(filepath.Join(dir, "requests.jsonl")))), []byte("\n"))
	if len(lines) != 9 {
		t.Errorf("requests.jsonl has %d lines, want 9", len(lines))
	}
	for i, l := range lines {
		if err := schemas.Validate("request-record", l); err != nil {
			t.Errorf("line %d: %v", i+1, err)
		}
	}

	stdout.Reset()
	if code := run(append(args, "--json", "--out", t.TempDir()), &stdout, &stderr); code != 0 {
		t.Fatalf("--json exit %d", code)
	}
	var js struct {
		Requests int            `json:"requests"`
		Outcomes map[string]int `json:"outcomes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &js); err != nil || js.Requests != 9 || js.Outcomes["ok"] != 9 {
		t.Errorf("--json stdout is not result.json (%v): %s", err, stdout.String())
	}
	if err := schemas.Validate("result", stdout.Bytes()); err != nil {
		t.Errorf("--json: %v", err)
	}
}

// TestBenchSweepFiles: a sweep writes sweep.json that matches its schema, with one
// level per concurrency and a Pareto front that holds the fastest level.
func TestBenchSweepFiles(t *testing.T) {
	url := benchSim(t, 0.02)
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "--endpoint", url, "--model", "m", "--concurrency", "1,4", "--requests", "8", "--max-tokens", "16",
		"--ignore-eos", "--reasoning-effort", "none", "--percentiles", "90,99", "--out", dir}
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	// Without p50 among --percentiles, the table, chart and front use the first one.
	if !strings.Contains(stdout.String(), "TTFT p90") || !bytes.Contains(must(os.ReadFile(filepath.Join(dir, "sweep.svg"))), []byte("TTFT p90 (ms)")) {
		t.Errorf("the sweep does not use p90:\n%s", stdout.String())
	}
	b := must(os.ReadFile(filepath.Join(dir, "sweep.json")))
	if err := schemas.Validate("sweep", b); err != nil {
		t.Errorf("sweep.json: %v", err)
	}
	var sw sweepResult
	if err := json.Unmarshal(b, &sw); err != nil {
		t.Fatal(err)
	}
	if len(sw.Levels) != 2 || sw.Levels[0].Name != "c1" || sw.Levels[1].Name != "c4" || sw.Chart == nil || sw.Percentile != 90 {
		t.Fatalf("levels %+v chart %v", sw.Levels, sw.Chart)
	}
	// The level with the highest throughput is never dominated.
	best := 0
	for i, l := range sw.Levels {
		if l.Figures.OutputTokenThroughput > sw.Levels[best].Figures.OutputTokenThroughput {
			best = i
		}
	}
	if !sw.Levels[best].Pareto.TTFT {
		t.Errorf("the highest-throughput level %s is off the TTFT front", sw.Levels[best].Name)
	}
	for _, l := range sw.Levels {
		if err := schemas.Validate("result", must(os.ReadFile(filepath.Join(dir, l.Dir, "result.json")))); err != nil {
			t.Errorf("%s/result.json: %v", l.Dir, err)
		}
	}
}

// TestBenchInterruptExitCode: a SIGINT during a bench exits 130 (not 1, not a
// failed-request code), says interrupted, and writes the result.
func TestBenchInterruptExitCode(t *testing.T) {
	// README: "130 on SIGINT or SIGTERM".
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) { benchInterrupted(t, sig) })
	}
}

func benchInterrupted(t *testing.T, sig syscall.Signal) {
	url := benchSim(t, 0.05)
	dir := t.TempDir()
	done := make(chan struct{})
	go func() {
		// Once a request has finished, the bench is under way and watching for
		// signals: interrupt it. A signal after run returned would kill the test.
		for {
			select {
			case <-done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "requests.jsonl")); bytes.Count(b, []byte("\n")) > 0 {
				syscall.Kill(os.Getpid(), sig)
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	code := run([]string{"bench", "--endpoint", url, "--model", "m", "--requests", "200", "--max-tokens", "2000", "--ignore-eos", "--out", dir}, &stdout, &stderr)
	close(done)
	if code != exitInterrupted {
		t.Fatalf("exit %d, want %d: %s", code, exitInterrupted, stderr.String())
	}
	for _, want := range []string{"received: stopping", "Error: interrupted:"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if s := stdout.String() + stderr.String(); strings.Contains(s, "hard bound") || strings.Contains(s, "restore") {
		t.Errorf("an interrupt is not a hard bound and has nothing to restore:\n%s", s)
	}
	var res benchResult
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, "result.json"))), &res); err != nil || res.Bench.Stopped != "interrupted" || res.Requests != 200 {
		t.Errorf("result: %v stopped %q requests %d", err, res.Bench.Stopped, res.Requests)
	}
}

// benchSim serves the simulator (model "m") for one test, with a user cache directory
// of the test's own for calibrations.
// TestBenchMarksEachPercentile: over 88 requests the p50 and p90 are certified
// (from 11 and 64 samples) and the p95 and p99 are not (130, 662); the table marks
// those two alone, the footnote gives their counts, and result.json says the same.
func TestBenchMarksEachPercentile(t *testing.T) {
	url := benchSim(t, 0.002)
	dir := t.TempDir()
	args := []string{"bench", "--endpoint", url, "--model", "m", "--concurrency", "8", "--requests", "88",
		"--max-tokens", "128", "--reasoning-effort", "low", "--nominal-context", "256", "--out", dir}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, re := range []string{
		`TTFT \(visible\) +88 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+\* +[0-9.]+\* +[0-9.]+\n`,
		`\* over fewer samples than certify the percentile \(one-sided 99%: (64 for p90, )?130 for p95, 662 for p99\): descriptive only`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout lacks %q:\n%s", re, out)
		}
	}
	// The p90 is in the footnote exactly when a row has fewer than its 64 samples:
	// TPOT's can, on a loaded machine, where a request's tokens arrive in one write.
	under64 := false
	for _, m := range regexp.MustCompile(`(?m)^ *(?:TTFO|TTFT \(visible\)|TPOT|ITL|E2E) +([0-9]+) `).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.Atoi(m[1])
		under64 = under64 || n < 64
	}
	if strings.Contains(out, "64 for p90") != under64 {
		t.Errorf("the footnote names p90 %v, but a row has fewer than 64 samples %v:\n%s", strings.Contains(out, "64 for p90"), under64, out)
	}
	var res struct {
		Bench struct {
			Figures struct {
				TTFT struct {
					Percentiles []struct {
						P           float64 `json:"p"`
						Descriptive bool    `json:"descriptive"`
					} `json:"percentiles"`
				} `json:"ttft_ms"`
			} `json:"figures"`
		} `json:"bench"`
	}
	if err := json.Unmarshal(must(os.ReadFile(filepath.Join(dir, "result.json"))), &res); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Bench.Figures.TTFT.Percentiles {
		got = append(got, fmt.Sprintf("p%v=%v", p.P, p.Descriptive))
	}
	if want := "p50=false p90=false p95=true p99=true"; strings.Join(got, " ") != want {
		t.Errorf("result.json ttft_ms percentiles: %s, want %s", strings.Join(got, " "), want)
	}
}

func benchSim(t *testing.T, scale float64) string {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	url, stop, err := steps.ServeSimulator(steps.SimOptions{Profile: "incumbent", Listen: "127.0.0.1:0", TimeScale: scale, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	return url
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
