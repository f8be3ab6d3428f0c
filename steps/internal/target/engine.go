package target

import (
	"fmt"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/zclconf/go-cty/cty"
)

// DefaultEngine is the serving engine a target that names none runs.
const DefaultEngine = promscrape.EngineVLLM

// metricAttrs maps each per-target override attribute to the name it replaces.
var metricAttrs = []struct {
	attr string
	dst  func(*promscrape.Names) *string
}{
	{"running_metric", func(n *promscrape.Names) *string { return &n.Running }},
	{"waiting_metric", func(n *promscrape.Names) *string { return &n.Waiting }},
	{"kv_usage_metric", func(n *promscrape.Names) *string { return &n.KVUsage }},
	{"prefix_cache_queries_metric", func(n *promscrape.Names) *string { return &n.PrefixCacheQueries }},
	{"prefix_cache_hits_metric", func(n *promscrape.Names) *string { return &n.PrefixCacheHits }},
	{"prompt_tokens_metric", func(n *promscrape.Names) *string { return &n.PromptTokens }},
	{"generation_tokens_metric", func(n *promscrape.Names) *string { return &n.GenerationTokens }},
	{"preemptions_metric", func(n *promscrape.Names) *string { return &n.Preemptions }},
	{"request_success_metric", func(n *promscrape.Names) *string { return &n.RequestSuccess }},
	{"finished_reason_label", func(n *promscrape.Names) *string { return &n.FinishedReasonLabel }},
	{"requests_aborted_metric", func(n *promscrape.Names) *string { return &n.RequestsAborted }},
}

// MetricAttributes lists the target attributes that override one native metric name.
func MetricAttributes() []string {
	out := make([]string, len(metricAttrs))
	for i, m := range metricAttrs {
		out[i] = m.attr
	}
	return out
}

// readEngine sets Engine, Native and CacheReset from the engine preset, the per-name
// overrides and cache_reset.
func (t *Target) readEngine(v cty.Value) error {
	t.Engine = Str(v, "engine")
	if t.Engine == "" {
		t.Engine = DefaultEngine
	}
	names, ok := promscrape.Preset(t.Engine)
	if !ok {
		return fmt.Errorf("target %s: engine %q has no metric preset (valid: %s)", t.Name, t.Engine, strings.Join(promscrape.Engines(), ", "))
	}
	for _, m := range metricAttrs {
		if a := attr(v, m.attr); a != cty.NilVal && !a.IsNull() {
			*m.dst(&names) = Str(v, m.attr)
		}
	}
	t.Native = names
	t.RunningMetric, t.WaitingMetric = names.Running, names.Waiting
	if s := Str(v, "cache_reset"); s != "" {
		path, err := ParseCacheReset(s)
		if err != nil {
			return fmt.Errorf("target %s: cache_reset: %w", t.Name, err)
		}
		t.CacheReset = path
	}
	return nil
}

// ParseCacheReset accepts "/path" or "POST /path": the call is always a POST, as both
// vLLM's /reset_prefix_cache and SGLang's /flush_cache are.
func ParseCacheReset(s string) (string, error) {
	path := strings.TrimSpace(s)
	if method, rest, ok := strings.Cut(path, " "); ok {
		if method != "POST" {
			return "", fmt.Errorf("%q: the reset call is a POST, e.g. \"POST /reset_prefix_cache\"", s)
		}
		path = strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \t\r\n") {
		return "", fmt.Errorf("%q: want a path such as \"/reset_prefix_cache\" (vLLM) or \"/flush_cache\" (SGLang)", s)
	}
	return path, nil
}
