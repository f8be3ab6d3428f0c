package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/steps"
)

// TestSimServeEngine: `rigor sim serve --engine sglang` serves SGLang's metric names
// and its /flush_cache reset; the default serves vLLM's.
func TestSimServeEngine(t *testing.T) {
	for engine, want := range map[string]struct{ metric, reset string }{
		"":       {"vllm:num_requests_running", "/reset_prefix_cache"},
		"sglang": {"sglang:num_running_reqs", "/flush_cache"},
	} {
		url, stop, err := steps.ServeSimulator(steps.SimOptions{Profile: "incumbent", Listen: "127.0.0.1:0", TimeScale: 0.01, Engine: engine})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get(url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(body), want.metric) {
			t.Errorf("engine %q: /metrics lacks %s", engine, want.metric)
		}
		resp, err = http.Post(url+want.reset, "application/json", nil)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("engine %q: POST %s: %v %v", engine, want.reset, err, resp)
		}
		if resp != nil {
			resp.Body.Close()
		}
		_ = stop()
	}
	if _, _, err := steps.ServeSimulator(steps.SimOptions{Profile: "incumbent", Listen: "127.0.0.1:0", Engine: "tgi"}); err == nil || !strings.Contains(err.Error(), `engine "tgi"`) {
		t.Errorf("unknown engine: %v", err)
	}
}
