package block

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
)

func TestModelsFingerprint(t *testing.T) {
	cases := map[string]struct {
		body, want string
	}{
		"created is left out, models sorted": {
			`{"object":"list","data":[{"id":"b","owned_by":"vllm","created":1,"max_model_len":8192},{"id":"a","owned_by":"vllm","root":"/m/a","created":2}]}`,
			"id=a owned_by=vllm root=/m/a; id=b owned_by=vllm max_model_len=8192"},
		"not a model list": {`{"error":"x"}`, ""},
		"empty list":       {`{"data":[]}`, ""},
		"not JSON":         {`<html>`, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := modelsFingerprint([]byte(tc.body)); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	a := modelsFingerprint([]byte(`{"data":[{"id":"m","owned_by":"o","created":1}]}`))
	b := modelsFingerprint([]byte(`{"data":[{"id":"m","owned_by":"o","created":99}]}`))
	if a != b {
		t.Errorf("a new created stamp reads as another model list: %q vs %q", a, b)
	}
}

func TestCounterResets(t *testing.T) {
	parse := func(s string) *promscrape.Snapshot {
		snap, err := promscrape.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	before := parse(`# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 100
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} 5
vllm:request_success_total{finished_reason="length",model_name="m"} 1
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 4
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{model_name="m",le="+Inf"} 6
vllm:e2e_request_latency_seconds_sum{model_name="m"} 3
vllm:e2e_request_latency_seconds_count{model_name="m"} 6
`)
	cases := map[string]struct {
		after string
		want  []string
	}{
		"all grew (gauges may fall)": {after: `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 150
# TYPE vllm:request_success_total counter
vllm:request_success_total{model_name="m",finished_reason="stop"} 7
vllm:request_success_total{finished_reason="length",model_name="m"} 1
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 0
`},
		"a restart": {after: `# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 20
# TYPE vllm:request_success_total counter
vllm:request_success_total{finished_reason="stop",model_name="m"} 7
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{model_name="m",le="+Inf"} 1
vllm:e2e_request_latency_seconds_sum{model_name="m"} 1
vllm:e2e_request_latency_seconds_count{model_name="m"} 1
`, want: []string{
			`vllm:e2e_request_latency_seconds{model_name="m"} 6 → 1`,
			`vllm:prompt_tokens_total{model_name="m"} 100 → 20`,
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, counterResets(before, parse(tc.after))); d != "" {
				t.Error(d)
			}
		})
	}
}

// The engine's events between blocks become the gravest finding: an OOM kill is
// class oom, a death restart, a signal identity, whatever their order.
func TestDockerEventsGravestFirst(t *testing.T) {
	at := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	kill := docker.Event{Action: "kill", At: at, Detail: "signal 15"}
	die := docker.Event{Action: "die", At: at.Add(time.Second), Detail: "exit code 137"}
	oom := docker.Event{Action: "oom", At: at.Add(2 * time.Second)}
	cases := []struct {
		evs  []docker.Event
		want engine.FailureClass
		says string
	}{
		{[]docker.Event{kill, die, oom}, engine.ClassOOM, "reported oom on container inc"},
		{[]docker.Event{kill, die}, engine.ClassRestart, "reported die on container inc at 2026-12-01T02:00:01Z (exit code 137) between blocks"},
		{[]docker.Event{kill}, engine.ClassIdentity, "reported kill on container inc at 2026-12-01T02:00:00Z (signal 15)"},
	}
	for _, c := range cases {
		f := dockerFinding(c.evs, "inc", "between blocks")
		if f == nil || f.class != c.want || !strings.Contains(f.message, c.says) {
			t.Errorf("%v: got %+v, want class %s saying %q", c.evs, f, c.want, c.says)
		}
	}
	if f := dockerFinding(nil, "inc", "between blocks"); f != nil {
		t.Errorf("no events: got %+v, want no finding", f)
	}
}
