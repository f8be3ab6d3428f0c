package promscrape

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
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

// Deltas are counter movements across a block.
type Deltas struct {
	PromptTokens     float64            `json:"prompt_tokens"`
	GenerationTokens float64            `json:"generation_tokens"`
	PrefixQueries    float64            `json:"prefix_cache_queries"`
	PrefixHits       float64            `json:"prefix_cache_hits"`
	Preemptions      float64            `json:"preemptions"`
	RequestSuccess   map[string]float64 `json:"request_success_by_finished_reason"`
	Missing          []string           `json:"missing,omitempty"` // counters absent from either scrape
}

// Delta computes vLLM counter deltas between two snapshots. A counter absent from
// either side is listed in Missing rather than reported as zero.
func Delta(before, after *Snapshot) Deltas {
	d := Deltas{RequestSuccess: map[string]float64{}}
	one := func(name string, dst *float64) {
		a, okA := after.Sum(name)
		b, okB := before.Sum(name)
		if !okA || !okB {
			d.Missing = append(d.Missing, name)
			return
		}
		*dst = a - b
	}
	one("vllm:prompt_tokens_total", &d.PromptTokens)
	one("vllm:generation_tokens_total", &d.GenerationTokens)
	one("vllm:prefix_cache_queries_total", &d.PrefixQueries)
	one("vllm:prefix_cache_hits_total", &d.PrefixHits)
	one("vllm:num_preemptions_total", &d.Preemptions)
	ba := before.ByLabel("vllm:request_success_total", "finished_reason")
	for k, v := range after.ByLabel("vllm:request_success_total", "finished_reason") {
		d.RequestSuccess[k] = v - ba[k]
	}
	sort.Strings(d.Missing)
	return d
}
