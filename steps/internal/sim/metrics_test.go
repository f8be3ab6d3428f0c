package sim

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
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

// TestSGLangExposition serves SGLang's names (srt/metrics/collector.py) instead of
// vLLM's, with counters that move by what the client's usage says.
func TestSGLangExposition(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale, Engine: EngineSGLang, Faults: Faults{AbortRate: 0.5, AbortAfter: 2}, Seed: 5})
	before := scrape(t, rn.URL())
	want := map[string]dto.MetricType{
		"sglang:num_running_reqs":             dto.MetricType_GAUGE,
		"sglang:num_queue_reqs":               dto.MetricType_GAUGE,
		"sglang:token_usage":                  dto.MetricType_GAUGE,
		"sglang:cached_tokens_total":          dto.MetricType_COUNTER,
		"sglang:prompt_tokens_total":          dto.MetricType_COUNTER,
		"sglang:generation_tokens_total":      dto.MetricType_COUNTER,
		"sglang:num_requests_total":           dto.MetricType_COUNTER,
		"sglang:num_aborted_requests_total":   dto.MetricType_COUNTER,
		"sglang:num_retracted_requests_total": dto.MetricType_COUNTER,
		"sglang:time_to_first_token_seconds":  dto.MetricType_HISTOGRAM,
		"sglang:e2e_request_latency_seconds":  dto.MetricType_HISTOGRAM,
	}
	for name, typ := range want {
		if f, ok := before[name]; !ok || f.GetType() != typ {
			t.Errorf("%s missing or not a %v", name, typ)
		}
	}
	if len(before) != len(want) {
		t.Errorf("%d families, want %d: no vLLM name may leak into the SGLang exposition", len(before), len(want))
	}
	var prompt, completion, cached float64
	aborted := 0
	for i := range 8 {
		res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", fmt.Sprintf("sg-%d", i), streamChat(promptOf("m", 100), 64))
		if err != nil || res.usage == nil {
			t.Fatalf("request %d: %v", i, err)
		}
		prompt += float64(res.usage.PromptTokens)
		completion += float64(res.usage.CompletionTokens)
		cached += float64(res.usage.PromptTokensDetails.CachedTokens)
		if res.finish == finishAbort {
			aborted++
		}
	}
	if aborted == 0 || aborted == 8 {
		t.Fatalf("%d of 8 aborted at rate 0.5 with seed 5; the test needs both kinds", aborted)
	}
	after := scrape(t, rn.URL())
	delta := func(name string) float64 { return value(t, after, name) - value(t, before, name) }
	cases := map[string]struct{ got, want float64 }{
		"prompt tokens":     {delta("sglang:prompt_tokens_total"), prompt},
		"cached tokens":     {delta("sglang:cached_tokens_total"), cached},
		"generation tokens": {delta("sglang:generation_tokens_total"), completion},
		"requests":          {delta("sglang:num_requests_total"), 8},
		"aborted requests":  {delta("sglang:num_aborted_requests_total"), float64(aborted)},
	}
	for name, c := range cases {
		if c.got != c.want {
			t.Errorf("%s moved by %v, want %v", name, c.got, c.want)
		}
	}
	if cached == 0 {
		t.Error("repeated prompts were never served from the cache")
	}
}

// TestCacheReset empties the prefix cache through each engine's own endpoint: the same
// prompt is a cache hit before the reset and a miss after it. The other engine's path
// does not exist, and a reset under load is refused.
func TestCacheReset(t *testing.T) {
	for engine, x := range expositions {
		t.Run(engine, func(t *testing.T) {
			rn := startServer(t, Config{TimeScale: fastScale, Engine: engine})
			prompt := promptOf("reset", 200)
			cachedOf := func(id string) int {
				res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", id, streamChat(prompt, 8))
				if err != nil || res.usage == nil {
					t.Fatalf("%s: %v", id, err)
				}
				return res.usage.PromptTokensDetails.CachedTokens
			}
			cachedOf("a")
			if c := cachedOf("b"); c < 150 {
				t.Fatalf("second send cached %d tokens, want the prompt from the cache", c)
			}
			reset := func(path string) int {
				resp, err := http.Post(rn.URL()+path, "application/json", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := reset(x.resetPath); code != http.StatusOK {
				t.Fatalf("POST %s: %d", x.resetPath, code)
			}
			if c := cachedOf("c"); c != 0 {
				t.Errorf("after the reset %d tokens came from the cache, want 0", c)
			}
			for other, ox := range expositions {
				if other != engine {
					if code := reset(ox.resetPath); code != http.StatusNotFound && code != http.StatusMethodNotAllowed {
						t.Errorf("%s serves %s's %s: %d", engine, other, ox.resetPath, code)
					}
				}
			}
		})
	}
	t.Run("refused under load", func(t *testing.T) {
		// One request runs and one waits (a batch of one): the refusal counts both,
		// and the cache survives it.
		rn := startServer(t, Config{TimeScale: fastScale, MaxRunning: 1})
		if _, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "primed", streamChat(strings.Repeat("cached words ", 64), 2)); err != nil {
			t.Fatal(err)
		}
		if err := rn.Server().SetFaults(Faults{HangRate: 1, HangAfter: 1}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, prompt := range []string{"hung one", "hung two"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = doStream(ctx, rn.URL(), "/v1/chat/completions", prompt, streamChat(prompt+" x y z", 8))
			}()
		}
		deadline := time.Now().Add(5 * time.Second)
		for st := rn.Server().Stats(); (st.Running != 1 || st.Waiting != 1) && time.Now().Before(deadline); st = rn.Server().Stats() {
			time.Sleep(5 * time.Millisecond)
		}
		if st := rn.Server().Stats(); st.Running != 1 || st.Waiting != 1 {
			t.Fatalf("%d running and %d waiting, want 1 and 1", st.Running, st.Waiting)
		}
		cachedBefore := rn.Server().Stats().PrefixCacheTokens
		resp, err := http.Post(rn.URL()+"/reset_prefix_cache", "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "2 requests are running or waiting") {
			t.Errorf("reset with one request running and one waiting: %d %s, want 400 counting 2", resp.StatusCode, body)
		}
		if got := rn.Server().Stats().PrefixCacheTokens; got != cachedBefore || cachedBefore == 0 {
			t.Errorf("the refused reset changed the cache: %d tokens before, %d after", cachedBefore, got)
		}
		cancel()
		wg.Wait()
	})
}
