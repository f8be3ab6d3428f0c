package block

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// TestSampleNativeSeesRequestsInFlight holds one request open on the simulator (a
// hang fault) and checks the sampler reads running = 1 from the engine's gauges.
func TestSampleNativeSeesRequestsInFlight(t *testing.T) {
	prof, _ := sim.LookupProfile("incumbent")
	srv, err := sim.Listen("127.0.0.1:0", sim.Config{Profile: prof, TimeScale: 0.01, Faults: sim.Faults{HangRate: 1, HangAfter: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	tg := target.Target{Endpoint: srv.URL(), Metrics: srv.URL() + "/metrics",
		RunningMetric: "vllm:num_requests_running", WaitingMetric: "vllm:num_requests_waiting"}
	go func() {
		body := `{"model":"` + prof.ServedModelName + `","stream":true,"messages":[{"role":"user","content":"hello there"}]}`
		resp, err := http.Post(srv.URL()+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err == nil {
			// Keep reading: closing the body would abort the hung request.
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	path := filepath.Join(t.TempDir(), "native-samples.jsonl")
	stop := sampleNative(path, tg, 20*time.Millisecond, func(s string) string { return s })
	time.Sleep(300 * time.Millisecond)
	stop()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, maxRunning := 0, 0.0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var s nativeSample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatal(err)
		}
		n++
		if s.Running != nil && *s.Running > maxRunning {
			maxRunning = *s.Running
		}
	}
	if n < 3 {
		t.Fatalf("%d samples in 300 ms at 20 ms", n)
	}
	if maxRunning != 1 {
		t.Fatalf("max running %v, want 1 (one hung request in flight)", maxRunning)
	}
}

// TestKeptScrapeIsRedacted: a /metrics answer that echoes the target's key in a
// label is kept with the key redacted, and its counters still parse.
func TestKeptScrapeIsRedacted(t *testing.T) {
	const key = "sk-tenant-0123456789"
	raw := "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{model_name=\"m\",tenant=\"" + key + "\"} 1234\n"
	sc := &engine.StepContext{Dir: t.TempDir(), Secrets: []string{key}}
	if err := keepScrape(sc, "native-after.prom", []byte(raw)); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(sc.Path("native-after.prom"))
	if strings.Contains(string(b), key) || !strings.Contains(string(b), "(sensitive)") {
		t.Fatalf("kept scrape:\n%s", b)
	}
	snap, err := promscrape.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := snap.Sum("vllm:prompt_tokens_total"); !ok || v != 1234 {
		t.Errorf("counter after redaction: %v %v", v, ok)
	}
}
