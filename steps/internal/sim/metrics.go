package sim

import (
	"io"
	"sort"
	"sync"
	"sync/atomic"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Engines the simulator imitates on /metrics and on its prefix-cache reset endpoint.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// exposition is one engine's metric names, as the engine exposes them (prometheus_client
// appends _total to counters). An empty name is a metric the engine does not have.
type exposition struct {
	running, waiting, kvUsage       string
	cacheQueries, cacheHits         string
	promptTokens, generationTokens  string
	success, finishedLabel, aborted string
	preemptions, ttft, e2e          string
	// resetPath is the engine's POST endpoint that empties the prefix cache.
	resetPath string
}

// expositions: vLLM from vllm/v1/metrics/loggers.py and its /reset_prefix_cache route;
// SGLang from srt/metrics/collector.py (served with --enable-metrics) and its
// /flush_cache route. SGLang counts cached tokens and finished and aborted requests,
// with no prefix-cache query counter and no finish-reason label.
var expositions = map[string]exposition{
	EngineVLLM: {
		running: "vllm:num_requests_running", waiting: "vllm:num_requests_waiting", kvUsage: "vllm:kv_cache_usage_perc",
		cacheQueries: "vllm:prefix_cache_queries_total", cacheHits: "vllm:prefix_cache_hits_total",
		promptTokens: "vllm:prompt_tokens_total", generationTokens: "vllm:generation_tokens_total",
		success: "vllm:request_success_total", finishedLabel: "finished_reason",
		preemptions: "vllm:num_preemptions_total",
		ttft:        "vllm:time_to_first_token_seconds", e2e: "vllm:e2e_request_latency_seconds",
		resetPath: "/reset_prefix_cache",
	},
	EngineSGLang: {
		running: "sglang:num_running_reqs", waiting: "sglang:num_queue_reqs", kvUsage: "sglang:token_usage",
		cacheHits:    "sglang:cached_tokens_total",
		promptTokens: "sglang:prompt_tokens_total", generationTokens: "sglang:generation_tokens_total",
		success: "sglang:num_requests_total", aborted: "sglang:num_aborted_requests_total",
		preemptions: "sglang:num_retracted_requests_total",
		ttft:        "sglang:time_to_first_token_seconds", e2e: "sglang:e2e_request_latency_seconds",
		resetPath: "/flush_cache",
	},
}

const labelModelName = "model_name"

// Finish reasons as vLLM's request_success counter labels them.
const (
	finishStop   = "stop"
	finishLength = "length"
	finishAbort  = "abort"
	finishError  = "error"
)

// Bucket bounds copied from vLLM so that native histograms bracket client figures the same way.
var (
	ttftBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}
	e2eBuckets  = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}
)

type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last slot is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	h.counts[sort.SearchFloat64s(h.bounds, v)]++
	h.sum += v
	h.n++
}

// metrics holds the server's native counters. The per-token counters are atomics because
// they move on every flush of every stream; the rest change once per request.
type metrics struct {
	waiting          atomic.Int64
	generationTokens atomic.Int64
	kvInUse          atomic.Int64 // prompt + generated tokens of running requests
	flushes          atomic.Int64 // writes that carried tokens; tokens/flushes > 1 means catching up

	mu           sync.Mutex
	promptTokens int64
	cacheQueries int64
	cacheHits    int64
	evictions    int64
	finished     map[string]int64
	ttft, e2e    histogram
}

func newMetrics() *metrics {
	return &metrics{
		finished: map[string]int64{finishStop: 0, finishLength: 0, finishAbort: 0, finishError: 0},
		ttft:     newHistogram(ttftBuckets),
		e2e:      newHistogram(e2eBuckets),
	}
}

// admitted counts a prefill: vLLM counts prompt tokens and prefix-cache queries when the
// scheduler takes the request, hits being the reused tokens.
func (m *metrics) admitted(prompt, cached int, evictions int64) {
	m.mu.Lock()
	m.promptTokens += int64(prompt)
	m.cacheQueries += int64(prompt)
	m.cacheHits += int64(cached)
	m.evictions = evictions
	m.mu.Unlock()
	m.kvInUse.Add(int64(prompt))
}

func (m *metrics) firstToken(seconds float64) {
	m.mu.Lock()
	m.ttft.observe(seconds)
	m.mu.Unlock()
}

func (m *metrics) done(reason string, e2eSeconds float64, heldKV int64) {
	m.mu.Lock()
	m.finished[reason]++
	m.e2e.observe(e2eSeconds)
	m.mu.Unlock()
	m.kvInUse.Add(-heldKV)
}

// finishedTotal is the number of requests finished so far, whatever their reason.
func (m *metrics) finishedTotal() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	var n int64
	for _, v := range m.finished {
		n += int64(v)
	}
	return n
}

// writeExposition writes the Prometheus text format under engine's names, families
// sorted by name.
func (m *metrics) writeExposition(w io.Writer, engine, model string, running int64, kvCapacity int) error {
	x := expositions[engine]
	label := []*dto.LabelPair{{Name: ptr(labelModelName), Value: ptr(model)}}
	gauge := func(name, help string, v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: label, Gauge: &dto.Gauge{Value: ptr(v)}}}}
	}
	counter := func(name, help string, v float64) *dto.MetricFamily {
		return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_COUNTER.Enum(),
			Metric: []*dto.Metric{{Label: label, Counter: &dto.Counter{Value: ptr(v)}}}}
	}
	hist := func(name, help string, h histogram) *dto.MetricFamily {
		var cum uint64
		buckets := make([]*dto.Bucket, len(h.bounds))
		for i, b := range h.bounds {
			cum += h.counts[i]
			buckets[i] = &dto.Bucket{UpperBound: ptr(b), CumulativeCount: ptr(cum)}
		}
		return &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_HISTOGRAM.Enum(),
			Metric: []*dto.Metric{{Label: label, Histogram: &dto.Histogram{
				SampleCount: ptr(h.n), SampleSum: ptr(h.sum), Bucket: buckets}}}}
	}

	kvUsage := float64(m.kvInUse.Load()) / float64(kvCapacity)
	if kvUsage > 1 {
		kvUsage = 1
	}
	m.mu.Lock()
	families := []*dto.MetricFamily{
		gauge(x.running, "Number of requests in model execution batches.", float64(running)),
		gauge(x.waiting, "Number of requests waiting to be processed.", float64(m.waiting.Load())),
		gauge(x.kvUsage, "KV-cache usage. 1 means 100 percent usage.", kvUsage),
		counter(x.cacheHits, "Prefix cache hits, in terms of number of cached tokens.", float64(m.cacheHits)),
		counter(x.promptTokens, "Number of prefill tokens processed.", float64(m.promptTokens)),
		counter(x.generationTokens, "Number of generation tokens processed.", float64(m.generationTokens.Load())),
		counter(x.preemptions, "Cumulative number of preemption from the engine.", 0),
		hist(x.ttft, "Histogram of time to first token in seconds.", m.ttft),
		hist(x.e2e, "Histogram of e2e request latency in seconds.", m.e2e),
	}
	if x.cacheQueries != "" {
		families = append(families, counter(x.cacheQueries, "Prefix cache queries, in terms of number of queried tokens.", float64(m.cacheQueries)))
	}
	if x.finishedLabel != "" {
		reasons := make([]string, 0, len(m.finished))
		for r := range m.finished {
			reasons = append(reasons, r)
		}
		sort.Strings(reasons)
		success := &dto.MetricFamily{Name: ptr(x.success), Help: ptr("Count of successfully processed requests."),
			Type: dto.MetricType_COUNTER.Enum()}
		for _, r := range reasons {
			success.Metric = append(success.Metric, &dto.Metric{
				Label:   []*dto.LabelPair{{Name: ptr(x.finishedLabel), Value: ptr(r)}, label[0]},
				Counter: &dto.Counter{Value: ptr(float64(m.finished[r]))},
			})
		}
		families = append(families, success)
	} else {
		var all, aborted int64
		for r, n := range m.finished {
			all += n
			if r == finishAbort || r == finishError {
				aborted += n
			}
		}
		families = append(families,
			counter(x.success, "Number of requests processed.", float64(all)),
			counter(x.aborted, "Number of requests aborted.", float64(aborted)))
	}
	m.mu.Unlock()
	sort.Slice(families, func(i, k int) bool { return families[i].GetName() < families[k].GetName() })
	for _, f := range families {
		if _, err := expfmt.MetricFamilyToText(w, f); err != nil {
			return err
		}
	}
	return nil
}

// ptr exists because client_model's generated types take every scalar by pointer.
func ptr[T any](v T) *T { return &v }
