package block

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
