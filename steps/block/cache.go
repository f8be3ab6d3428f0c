package block

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// The cache contradiction thresholds, on the share of the block's prompt tokens
// served from the prefix cache. Seed 001: "actual cache counters determine observed
// reuse"; a block whose counters contradict the state the plan declares is recorded
// as such, never averaged in silently.
const (
	// ColdMaxCached: a cold block with more than this share cached was not cold.
	ColdMaxCached = 0.05
	// PrimedMinCached: a primed block with less than this share cached did not find
	// its corpus resident (seed 001: "a primed corpus is not necessarily resident").
	PrimedMinCached = 0.50
	// SharedMinCached: a block of shared prefixes with less than this share cached
	// shared nothing.
	SharedMinCached = 0.05
)

// Where a block's cache state came from when it started.
const (
	StartReset       = "reset"        // the block reset the prefix cache first
	StartFreshServer = "fresh_server" // the server had prefilled nothing since it started
	StartCarriedOver = "carried_over" // earlier traffic on this server may be in the cache
	StartUnknown     = "unknown"      // no reset and no native counters to tell
)

// cacheInfo is the "cache" section of result.json.
type cacheInfo struct {
	// Expected is the state the block expects its corpus to find: primed, cold or
	// shared; ExpectedFrom says whether the plan declared it (expect_cache) or the
	// block derived it from the corpus protocol.
	Expected     string     `json:"expected"`
	ExpectedFrom string     `json:"expected_from"`
	Start        cacheStart `json:"start"`
	Observed     observed   `json:"observed"`
	// Contradiction says how the observed reuse contradicts Expected, or is null.
	Contradiction *string `json:"contradiction"`
}

// cacheStart is the state of the server's prefix cache before the block sent anything.
type cacheStart struct {
	State string     `json:"state"`
	Reset *resetCall `json:"reset,omitempty"`
	// QueriesBefore is the native prefix-cache query counter before the block: 0
	// means the server had prefilled nothing since it started.
	QueriesBefore *float64 `json:"prefix_cache_queries_before"`
	// CarriedFrom is the last block that ran against the same container before this
	// one, when the cache was carried over.
	CarriedFrom *carried `json:"carried_from,omitempty"`
	// InheritedFromOtherArm: the cache was carried over from a block of another arm
	// (another matrix's arm of the same name included, or a block outside any
	// matrix), not reset: this arm did not start from a state of its own.
	InheritedFromOtherArm bool `json:"inherited_from_other_arm"`
}

type resetCall struct {
	Path   string `json:"path"`
	Status int    `json:"status"`
	Error  string `json:"error,omitempty"`
}

type carried struct {
	Addr string `json:"addr"`
	Arm  string `json:"arm"`
}

// observed is the reuse the block saw, from both sources.
type observed struct {
	// Source names the figure Fraction is taken from: "native" (the engine's prefix
	// cache counters, preferred), "cached_tokens" (the sum over the requests' usage)
	// or "none".
	Source   string   `json:"source"`
	Fraction *float64 `json:"fraction"`
	// CachedTokens: Σ usage.cached_tokens / Σ usage.prompt_tokens over the requests
	// that reported cached_tokens.
	CachedTokens *reuse `json:"cached_tokens"`
	// Native: Δ prefix-cache hits / Δ prefix-cache queries across the block.
	Native *reuse `json:"native"`
}

type reuse struct {
	Queried  float64 `json:"queried_tokens"`
	Hit      float64 `json:"hit_tokens"`
	Fraction float64 `json:"fraction"`
	Requests int     `json:"requests,omitempty"` // cached_tokens: the requests that reported it
}

// expectedCache is the cache state a block expects: the declared one, or the corpus
// protocol's. A primed block is one whose cell's corpus an earlier block of its arm
// sent (never in a cold lane, whose prompts are new every repetition); otherwise the
// block's requests share prefixes (repeated) or nothing (unique).
func expectedCache(cfg cty.Value, wl loadgen.Workload) (state, from string) {
	if s := target.Str(cfg, "expect_cache"); s != "" {
		return s, "declared"
	}
	switch {
	case target.Bool(cfg, "primed") && !wl.Fresh:
		return plans.CachePrimed, "derived"
	case wl.Prefixes == corpus.PrefixRepeated:
		return plans.CacheShared, "derived"
	}
	return plans.CacheCold, "derived"
}

func validCacheState(s string) error {
	for _, v := range plans.CacheStates {
		if s == v {
			return nil
		}
	}
	return fmt.Errorf("expect_cache %q: want one of %s", s, strings.Join(plans.CacheStates, ", "))
}

// resetCache POSTs the target's cache_reset path. The caller runs it after the idle
// gate and before anything is sent; a refused or failed reset leaves the block
// without the start the plan declared.
func resetCache(ctx context.Context, t target.Target) (*resetCall, error) {
	rc := &resetCall{Path: t.CacheReset}
	if t.CacheReset == "" {
		return rc, fmt.Errorf("target %s declares no cache_reset call", t.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.Endpoint+t.CacheReset, nil)
	if err != nil {
		return rc, err
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		rc.Error = redact(err.Error(), t.APIKey)
		return rc, fmt.Errorf("POST %s: %s", t.CacheReset, rc.Error)
	}
	defer resp.Body.Close()
	rc.Status = resp.StatusCode
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		rc.Error = redact(strings.TrimSpace(string(body)), t.APIKey)
		return rc, fmt.Errorf("POST %s: %s: %s", t.CacheReset, resp.Status, rc.Error)
	}
	return rc, nil
}

func redact(s, key string) string {
	if key == "" {
		return s
	}
	return strings.ReplaceAll(s, key, "[redacted]")
}

// cacheStartOf says where the cache state came from: the reset, a fresh server
// (nothing prefilled since it started), or what earlier blocks on the same container
// left, naming the last of them.
func cacheStartOf(sc *engine.StepContext, t target.Target, rc *resetCall, before *promscrape.Snapshot) cacheStart {
	st := cacheStart{State: StartUnknown, Reset: rc}
	if before != nil && t.Native.PrefixCacheQueries != "" {
		if q, ok := before.Sum(t.Native.PrefixCacheQueries); ok {
			st.QueriesBefore = &q
		}
	}
	switch {
	case rc != nil:
		st.State = StartReset
		return st
	case st.QueriesBefore != nil && *st.QueriesBefore == 0:
		st.State = StartFreshServer
		return st
	case st.QueriesBefore != nil:
		st.State = StartCarriedOver
	}
	if st.State != StartCarriedOver || sc.History == nil {
		return st
	}
	hist := sc.History()
	for i := len(hist) - 1; i >= 0; i-- {
		e := hist[i]
		if e.Type != "block" || e.Addr == sc.Addr || e.Outputs == cty.NilVal || e.Outputs.IsNull() {
			continue
		}
		if target.Str(e.Outputs, "container") != t.Container {
			continue
		}
		st.CarriedFrom = &carried{Addr: e.Addr, Arm: target.Str(e.Outputs, "arm")}
		break
	}
	if st.CarriedFrom != nil {
		// An arm of the same name in another matrix is another arm.
		st.InheritedFromOtherArm = st.CarriedFrom.Arm != target.Str(sc.Config, "arm") || plans.StepAddr(st.CarriedFrom.Addr) != plans.StepAddr(sc.Addr)
	}
	return st
}

// observe computes the reuse the block saw: from the records' cached_tokens and from
// the native counters across the block (before.metrics and native-after.prom).
func observe(records []loadgen.Record, deltas *promscrape.Deltas, names promscrape.Names) observed {
	var o observed
	var prompt, cached float64
	n := 0
	for _, r := range records {
		if r.Usage != nil && r.Usage.CachedTokens != nil {
			prompt += float64(r.Usage.PromptTokens)
			cached += float64(*r.Usage.CachedTokens)
			n++
		}
	}
	if n > 0 && prompt > 0 {
		o.CachedTokens = &reuse{Queried: prompt, Hit: cached, Fraction: cached / prompt, Requests: n}
	}
	if deltas != nil && names.PrefixCacheQueries != "" && names.PrefixCacheHits != "" && deltas.PrefixQueries > 0 {
		missing := false
		for _, m := range deltas.Missing {
			missing = missing || m == names.PrefixCacheQueries || m == names.PrefixCacheHits
		}
		if !missing {
			o.Native = &reuse{Queried: deltas.PrefixQueries, Hit: deltas.PrefixHits, Fraction: deltas.PrefixHits / deltas.PrefixQueries}
		}
	}
	switch {
	case o.Native != nil:
		o.Source, o.Fraction = "native", &o.Native.Fraction
	case o.CachedTokens != nil:
		o.Source, o.Fraction = "cached_tokens", &o.CachedTokens.Fraction
	default:
		o.Source = "none"
	}
	return o
}

// contradiction says how the observed reuse contradicts the expected state, or "".
func contradiction(expected string, o observed) string {
	if o.Fraction == nil {
		return ""
	}
	f := *o.Fraction
	pct := func(x float64) string { return fmt.Sprintf("%.1f %%", 100*x) }
	switch expected {
	case plans.CacheCold:
		if f > ColdMaxCached {
			return fmt.Sprintf("expected cold, but %s of prompt tokens came from the prefix cache (%s; cold allows at most %s)", pct(f), o.Source, pct(ColdMaxCached))
		}
	case plans.CachePrimed:
		if f < PrimedMinCached {
			return fmt.Sprintf("expected primed, but only %s of prompt tokens came from the prefix cache (%s; primed needs at least %s): the primed corpus was not resident", pct(f), o.Source, pct(PrimedMinCached))
		}
	case plans.CacheShared:
		if f < SharedMinCached {
			return fmt.Sprintf("expected shared prefixes, but only %s of prompt tokens came from the prefix cache (%s; shared needs at least %s)", pct(f), o.Source, pct(SharedMinCached))
		}
	}
	return ""
}

// nativeDeltas reads native-after.prom, written after the block, and computes the
// counter deltas since before under the target's metric names.
func nativeDeltas(sc *engine.StepContext, t target.Target, before *promscrape.Snapshot) *promscrape.Deltas {
	if before == nil {
		return nil
	}
	raw, err := os.ReadFile(sc.Path("native-after.prom"))
	if err != nil {
		return nil
	}
	after, err := promscrape.Parse(raw)
	if err != nil {
		return nil
	}
	d := t.Native.Delta(before, after)
	return &d
}
