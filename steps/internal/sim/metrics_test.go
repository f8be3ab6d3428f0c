package sim

import (
	"context"
	"net/http"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape parses /metrics the way the native-metrics collector does.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// value returns a counter's or gauge's value, or a histogram's sample count; labels
// beyond model_name select among series.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	if !ok {
		t.Fatalf("metric %s missing", name)
	}
series:
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if got["model_name"] == "" {
			t.Fatalf("%s lacks model_name", name)
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if got[labels[i]] != labels[i+1] {
				continue series
			}
		}
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			return m.GetCounter().GetValue()
		case dto.MetricType_GAUGE:
			return m.GetGauge().GetValue()
		case dto.MetricType_HISTOGRAM:
			return float64(m.GetHistogram().GetSampleCount())
		}
	}
	t.Fatalf("no %s series with %v", name, labels)
	return 0
}

func TestMetricsNamesAndTypes(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	fams := scrape(t, rn.URL())
	want := map[string]dto.MetricType{
		"vllm:num_requests_running":        dto.MetricType_GAUGE,
		"vllm:num_requests_waiting":        dto.MetricType_GAUGE,
		"vllm:kv_cache_usage_perc":         dto.MetricType_GAUGE,
		"vllm:prefix_cache_queries_total":  dto.MetricType_COUNTER,
		"vllm:prefix_cache_hits_total":     dto.MetricType_COUNTER,
		"vllm:prompt_tokens_total":         dto.MetricType_COUNTER,
		"vllm:generation_tokens_total":     dto.MetricType_COUNTER,
		"vllm:request_success_total":       dto.MetricType_COUNTER,
		"vllm:num_preemptions_total":       dto.MetricType_COUNTER,
		"vllm:time_to_first_token_seconds": dto.MetricType_HISTOGRAM,
		"vllm:e2e_request_latency_seconds": dto.MetricType_HISTOGRAM,
	}
	for name, typ := range want {
		f, ok := fams[name]
		if !ok {
			t.Errorf("%s missing", name)
			continue
		}
		if f.GetType() != typ {
			t.Errorf("%s is %v, want %v", name, f.GetType(), typ)
		}
	}
	if len(fams) != len(want) {
		t.Errorf("%d families, want %d", len(fams), len(want))
	}
}

func TestMetricsCountersMoveByUsage(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	before := scrape(t, rn.URL())
	var prompt, completion, cached float64
	for i, p := range []string{promptOf("m", 400), promptOf("m", 400), promptOf("k", 90)} {
		res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "", streamChat(p, 2000))
		if err != nil || res.usage == nil {
			t.Fatalf("request %d: %v %+v", i, err, res)
		}
		prompt += float64(res.usage.PromptTokens)
		completion += float64(res.usage.CompletionTokens)
		cached += float64(res.usage.PromptTokensDetails.CachedTokens)
	}
	after := scrape(t, rn.URL())
	delta := func(name string, labels ...string) float64 {
		return value(t, after, name, labels...) - value(t, before, name, labels...)
	}
	cases := map[string]struct {
		got, want float64
	}{
		"prompt tokens":       {delta("vllm:prompt_tokens_total"), prompt},
		"prefix queries":      {delta("vllm:prefix_cache_queries_total"), prompt},
		"prefix hits":         {delta("vllm:prefix_cache_hits_total"), cached},
		"generation tokens":   {delta("vllm:generation_tokens_total"), completion},
		"stop successes":      {delta("vllm:request_success_total", "finished_reason", "stop"), 3},
		"length successes":    {delta("vllm:request_success_total", "finished_reason", "length"), 0},
		"ttft observations":   {delta("vllm:time_to_first_token_seconds"), 3},
		"e2e observations":    {delta("vllm:e2e_request_latency_seconds"), 3},
		"running after drain": {value(t, after, "vllm:num_requests_running"), 0},
		"kv usage after":      {value(t, after, "vllm:kv_cache_usage_perc"), 0},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: got %g, want %g", name, c.got, c.want)
		}
	}
	if cached == 0 {
		t.Error("the repeated prompt hit nothing")
	}
}

// A hung request keeps its batch slot, so with one slot the others queue: the gauges
// must show it, and draining must return them to zero with the aborts counted.
func TestMetricsGaugesUnderQueueing(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale, MaxRunning: 1, Faults: Faults{HangRate: 1, HangAfter: 2}})
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			_, err := doStream(ctx, rn.URL(), "/v1/chat/completions", "", streamChat(promptOf("g", 50), 2000))
			errs <- err
		}()
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		fams := scrape(t, rn.URL())
		running, waiting := value(t, fams, "vllm:num_requests_running"), value(t, fams, "vllm:num_requests_waiting")
		if running == 1 && waiting == 2 {
			if kv := value(t, fams, "vllm:kv_cache_usage_perc"); kv <= 0 {
				t.Errorf("kv usage %g with a running request", kv)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("running %g waiting %g, want 1 and 2", running, waiting)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	for i := 0; i < 3; i++ {
		<-errs
	}
	deadline = time.Now().Add(5 * time.Second)
	for {
		fams := scrape(t, rn.URL())
		if value(t, fams, "vllm:request_success_total", "finished_reason", "abort") == 3 {
			if r, w := value(t, fams, "vllm:num_requests_running"), value(t, fams, "vllm:num_requests_waiting"); r != 0 || w != 0 {
				t.Errorf("after drain running %g waiting %g", r, w)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("aborts not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
