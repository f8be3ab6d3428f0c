package promscrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Snapshot is one scrape: the raw exposition and its parsed families.
type Snapshot struct {
	Raw      []byte
	Families map[string]*dto.MetricFamily
	At       time.Time
}

// Scrape fetches and parses url.
func Scrape(ctx context.Context, url string) (*Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("metrics URL %q: %w", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	if resp.StatusCode/100 != 2 {
		return &Snapshot{Raw: raw, At: time.Now()}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	return Parse(raw)
}

// Parse parses Prometheus text exposition.
func Parse(raw []byte) (*Snapshot, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return &Snapshot{Raw: raw, At: time.Now()}, fmt.Errorf("parse metrics: %w", err)
	}
	return &Snapshot{Raw: raw, Families: fams, At: time.Now()}, nil
}

// family finds a family by name, accepting the _total suffix either way, since
// prometheus_client appends it to counters on exposition.
func (s *Snapshot) family(name string) *dto.MetricFamily {
	if s == nil || s.Families == nil {
		return nil
	}
	if f, ok := s.Families[name]; ok {
		return f
	}
	if f, ok := s.Families[name+"_total"]; ok {
		return f
	}
	return s.Families[strings.TrimSuffix(name, "_total")]
}

// Sum adds every series of a counter or gauge family; ok is false when absent.
func (s *Snapshot) Sum(name string) (float64, bool) {
	f := s.family(name)
	if f == nil {
		return 0, false
	}
	total := 0.0
	for _, m := range f.Metric {
		total += value(m)
	}
	return total, true
}

// ByLabel sums a family per value of one label.
func (s *Snapshot) ByLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	f := s.family(name)
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		key := ""
		for _, lp := range m.Label {
			if lp.GetName() == label {
				key = lp.GetValue()
			}
		}
		out[key] += value(m)
	}
	return out
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// Names are the native metric names of one serving engine: what a block reads for
// the running and waiting gauges, the prefix cache, the token counters and the request
// outcomes. An empty name means the engine has no such metric.
type Names struct {
	Running string `json:"running"`
	Waiting string `json:"waiting"`
	KVUsage string `json:"kv_usage"`
	// PrefixCacheQueries counts prompt tokens looked up in the prefix cache and
	// PrefixCacheHits the tokens found there: reuse = Δhits / Δqueries.
	PrefixCacheQueries string `json:"prefix_cache_queries"`
	PrefixCacheHits    string `json:"prefix_cache_hits"`
	PromptTokens       string `json:"prompt_tokens"`
	GenerationTokens   string `json:"generation_tokens"`
	Preemptions        string `json:"preemptions"`
	// RequestSuccess counts finished requests, one series per value of
	// FinishedReasonLabel when that is set.
	RequestSuccess      string `json:"request_success"`
	FinishedReasonLabel string `json:"finished_reason_label"`
	// RequestsAborted counts aborted requests where the engine keeps them apart.
	RequestsAborted string `json:"requests_aborted"`
}

// Engine presets.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// presets are the metric names as each engine exposes them (prometheus_client adds
// _total to counters). vLLM: vllm/v1/metrics/loggers.py. SGLang: srt/metrics/
// collector.py, which needs --enable-metrics; it has no prefix-cache query counter, and
// every prompt token is looked up in its radix cache, so prompt tokens stand for the
// queries (cached_tokens_total / prompt_tokens_total is the reuse SGLang's own docs and
// AIPerf derive), and it counts finished and aborted requests without a finish reason.
var presets = map[string]Names{
	EngineVLLM: {
		Running: "vllm:num_requests_running", Waiting: "vllm:num_requests_waiting", KVUsage: "vllm:kv_cache_usage_perc",
		PrefixCacheQueries: "vllm:prefix_cache_queries_total", PrefixCacheHits: "vllm:prefix_cache_hits_total",
		PromptTokens: "vllm:prompt_tokens_total", GenerationTokens: "vllm:generation_tokens_total",
		Preemptions:    "vllm:num_preemptions_total",
		RequestSuccess: "vllm:request_success_total", FinishedReasonLabel: "finished_reason",
	},
	EngineSGLang: {
		Running: "sglang:num_running_reqs", Waiting: "sglang:num_queue_reqs", KVUsage: "sglang:token_usage",
		PrefixCacheQueries: "sglang:prompt_tokens_total", PrefixCacheHits: "sglang:cached_tokens_total",
		PromptTokens: "sglang:prompt_tokens_total", GenerationTokens: "sglang:generation_tokens_total",
		Preemptions:    "sglang:num_retracted_requests_total",
		RequestSuccess: "sglang:num_requests_total", RequestsAborted: "sglang:num_aborted_requests_total",
	},
}

// Engines lists the engines with a preset, sorted.
func Engines() []string { return []string{EngineSGLang, EngineVLLM} }

// Preset returns the metric names of engine; ok is false for an engine without one.
func Preset(engine string) (Names, bool) {
	n, ok := presets[engine]
	return n, ok
}

// Deltas are counter movements across a block.
type Deltas struct {
	PromptTokens     float64 `json:"prompt_tokens"`
	GenerationTokens float64 `json:"generation_tokens"`
	PrefixQueries    float64 `json:"prefix_cache_queries"`
	PrefixHits       float64 `json:"prefix_cache_hits"`
	Preemptions      float64 `json:"preemptions"`
	// RequestSuccess is keyed by finish reason; an engine without the label has the
	// one key "all".
	RequestSuccess  map[string]float64 `json:"request_success_by_finished_reason"`
	RequestsAborted *float64           `json:"requests_aborted,omitempty"`
	Missing         []string           `json:"missing,omitempty"` // counters absent from either scrape
}

// Delta computes vLLM counter deltas between two snapshots (Names.Delta with the vLLM
// preset).
func Delta(before, after *Snapshot) Deltas { return presets[EngineVLLM].Delta(before, after) }

// Delta computes the counter deltas between two snapshots under these names. A counter
// absent from either side is listed in Missing rather than reported as zero; a name
// left empty is neither read nor listed.
func (n Names) Delta(before, after *Snapshot) Deltas {
	d := Deltas{RequestSuccess: map[string]float64{}}
	one := func(name string, dst *float64) bool {
		if name == "" {
			return false
		}
		a, okA := after.Sum(name)
		b, okB := before.Sum(name)
		if !okA || !okB {
			d.Missing = append(d.Missing, name)
			return false
		}
		*dst = a - b
		return true
	}
	one(n.PromptTokens, &d.PromptTokens)
	one(n.GenerationTokens, &d.GenerationTokens)
	one(n.PrefixCacheQueries, &d.PrefixQueries)
	one(n.PrefixCacheHits, &d.PrefixHits)
	one(n.Preemptions, &d.Preemptions)
	var aborted float64
	if one(n.RequestsAborted, &aborted) {
		d.RequestsAborted = &aborted
	}
	switch {
	case n.RequestSuccess == "":
	case n.FinishedReasonLabel == "":
		var all float64
		if one(n.RequestSuccess, &all) {
			d.RequestSuccess["all"] = all
		}
	case before.family(n.RequestSuccess) == nil || after.family(n.RequestSuccess) == nil:
		d.Missing = append(d.Missing, n.RequestSuccess)
	default:
		ba := before.ByLabel(n.RequestSuccess, n.FinishedReasonLabel)
		for k, v := range after.ByLabel(n.RequestSuccess, n.FinishedReasonLabel) {
			d.RequestSuccess[k] = v - ba[k]
		}
	}
	sort.Strings(d.Missing)
	d.Missing = slices.Compact(d.Missing)
	return d
}
