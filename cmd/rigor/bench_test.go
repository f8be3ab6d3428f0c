package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps"
)

// TestBenchAgainstSimulator runs `rigor bench` end to end against the simulator: the
// table names every figure with its n and the descriptive mark, the outcome table
// sums to the requests, stdout carries nothing but results, and the files match their
// schemas. With --json, stdout is result.json itself.
func TestBenchAgainstSimulator(t *testing.T) {
	url, stop, err := steps.ServeSimulator(steps.SimOptions{Profile: "incumbent", Listen: "127.0.0.1:0", TimeScale: 0.02, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	dir := t.TempDir()
	args := []string{"bench", "--endpoint", url, "--model", "m", "--concurrency", "3", "--requests", "9",
		"--max-tokens", "96", "--reasoning-effort", "low", "--nominal-context", "512", "--out", dir}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	// TPOT and decode tok/s may have fewer samples: a request whose tokens all came
	// in one socket read has no generation duration, so no capacity TPOT.
	for _, re := range []string{
		`TTFO \(ms\) +9 +[0-9.]+ +[0-9.]+ +[0-9.]+\*`,
		`visible TTFT \(ms\) +9 `, `TPOT \(ms\) +[1-9] `, `E2E \(ms\) +9 `, `decode tok/s +[1-9] `, `effective prefill tok/s +9 `,
		`\* p99 of fewer than 100 samples: descriptive only`,
		`ok +9\n`, `cancelled +0\n`,
		`visible successes / attempted: 9/9 \(100.0%\)`,
		`aggregate output: [0-9.]+ tok/s`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("stdout lacks %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "INF") {
		t.Errorf("log lines on stdout:\n%s", out)
	}
	for name, schema := range map[string]string{"result.json": "result"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas.Validate(schema, b); err != nil {
			t.Errorf("%s: %v", name, err)
		}
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
	var res struct {
		Requests int            `json:"requests"`
		Outcomes map[string]int `json:"outcomes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res.Requests != 9 || res.Outcomes["ok"] != 9 {
		t.Errorf("--json stdout is not result.json (%v): %s", err, stdout.String())
	}
	if err := schemas.Validate("result", stdout.Bytes()); err != nil {
		t.Errorf("--json: %v", err)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
