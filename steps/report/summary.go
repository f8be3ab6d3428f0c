package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// SchemaName is the summary.json schema identifier (schemas/summary.schema.json).
const SchemaName = "rigor-summary/v1"

// Dispositions of a cell.
const (
	Accepted = "accepted"
	Failed   = "failed"
	Blocked  = "blocked"
	Deferred = "deferred"
	Pending  = "pending"
)

// Summary is summary.json.
type Summary struct {
	Schema           string      `json:"schema"`
	Campaign         string      `json:"campaign"`
	PlanSHA256       string      `json:"plan_sha256"`
	EffectivePlan    string      `json:"effective_plan_sha256"`
	Amendments       int         `json:"amendments"`
	ManifestSHA256   string      `json:"manifest_sha256,omitempty"`
	CampaignStatus   string      `json:"campaign_status"`
	PercentileMethod string      `json:"percentile_method"`
	TimingPopulation string      `json:"timing_population"`
	Rows             []Row       `json:"rows"`
	Statistics       Statistics  `json:"statistics"`
	Promotion        Verdict     `json:"promotion"`
	Integrity        []string    `json:"integrity_problems"`
	Coverage         CoverageSum `json:"coverage"`
}

// CoverageSum counts the plan's steps by their latest status.
type CoverageSum struct {
	Steps    int            `json:"steps"`
	ByStatus map[string]int `json:"by_status"`
}

// Statistics counts cells and requests. Requests "including priming" cover every
// matrix block; "measured" excludes priming blocks. Pilot blocks are counted apart.
type Statistics struct {
	RequiredCells            int `json:"required_cells"`
	AcceptedCells            int `json:"accepted_cells"`
	FailedCells              int `json:"failed_cells"`
	BlockedCells             int `json:"blocked_cells"`
	DeferredCells            int `json:"deferred_cells"`
	PendingCells             int `json:"pending_cells"`
	Blocks                   int `json:"blocks_with_records"`
	AttemptedRequests        int `json:"attempted_requests_including_priming"`
	SucceededRequests        int `json:"succeeded_requests_including_priming"`
	MeasuredAttempted        int `json:"measured_requests_attempted"`
	MeasuredSucceeded        int `json:"measured_requests_succeeded"`
	OtherBlocksAttempted     int `json:"other_blocks_requests_attempted"`
	OtherBlocksSucceeded     int `json:"other_blocks_requests_succeeded"`
	FailedRequestsIncluding  int `json:"failed_requests_including_priming"`
	MeasuredBlocksCompleted  int `json:"measured_blocks_completed"`
	PrimingBlocksCompleted   int `json:"priming_blocks_completed"`
	MeasuredBlocksPlanned    int `json:"measured_blocks_planned"`
	PrimingBlocksPlanned     int `json:"priming_blocks_planned"`
	RequestsNotInStatistics  int `json:"priming_requests_excluded"`
	DescriptiveDistributions int `json:"descriptive_distributions"`
}

// Row is one matrix cell.
type Row struct {
	CellID      string   `json:"cell_id"`
	Disposition string   `json:"disposition"`
	Reason      string   `json:"reason,omitempty"`
	Plan        RowPlan  `json:"plan"`
	Blocks      []RowBlk `json:"blocks"`
	// The figures below are over the measured blocks (priming excluded) and are
	// absent when no measured block left records.
	VisibleSuccesses   *int          `json:"visible_successes,omitempty"`
	Attempted          *int          `json:"attempted,omitempty"`
	ActualPromptTokens *PromptDist   `json:"actual_prompt_tokens,omitempty"`
	AggregateTokS      *float64      `json:"aggregate_output_throughput_tok_s,omitempty"`
	AggregateBasis     string        `json:"aggregate_output_throughput_basis,omitempty"`
	Timing             *RowTiming    `json:"timing,omitempty"`
	Native             *RowNative    `json:"native,omitempty"`
	Concurrency        *RowConc      `json:"concurrency,omitempty"`
	GPU                []GPUDevice   `json:"gpu,omitempty"`
	Artefacts          []ArtefactRef `json:"artefacts,omitempty"`
	FailedRequestIDs   []string      `json:"failed_request_ids,omitempty"`
}

// RowPlan is what the plan asked of the cell.
type RowPlan struct {
	Matrix        string   `json:"matrix"`
	Arm           string   `json:"arm"`
	Target        string   `json:"target"`
	Concurrency   int      `json:"concurrency"`
	ContextTokens int      `json:"context_tokens"`
	Requests      any      `json:"requests"`
	Repetitions   int      `json:"repetitions"`
	Priming       bool     `json:"priming"`
	Workload      string   `json:"workload"`
	Corpus        string   `json:"corpus,omitempty"`
	MaxTokens     *int     `json:"max_tokens,omitempty"`
	Temperature   *float64 `json:"temperature,omitempty"`
	TopP          *float64 `json:"top_p,omitempty"`
	Reasoning     string   `json:"reasoning_effort,omitempty"`
}

// RowBlk is one block of the cell.
type RowBlk struct {
	Step             string   `json:"step"`
	Phase            string   `json:"phase"`
	Repetition       int      `json:"repetition"`
	Status           string   `json:"status"`
	Class            string   `json:"class,omitempty"`
	Attempt          int      `json:"attempt,omitempty"`
	Attempted        int      `json:"attempted"`
	VisibleSuccesses int      `json:"visible_successes"`
	WallS            float64  `json:"wall_s"`
	AggregateTokS    float64  `json:"aggregate_output_tok_s"`
	TTFTp50          *float64 `json:"ttft_ms_p50"`
	TPOTp50          *float64 `json:"tpot_ms_p50"`
	InStatistics     bool     `json:"in_statistics"`
}

// PromptDist is the actual prompt-token distribution (seed 003). ordered lists the
// prompt tokens of the first measured repetition in request-index order.
type PromptDist struct {
	Min            float64   `json:"min"`
	P50            float64   `json:"p50"`
	P95            float64   `json:"p95"`
	Max            float64   `json:"max"`
	Samples        int       `json:"samples"`
	Ordered        []float64 `json:"ordered"`
	OrderedBlock   string    `json:"ordered_block"`
	OrderedCapped  bool      `json:"ordered_capped,omitempty"`
	NominalContext int       `json:"nominal_context"`
}

// RowTiming holds the distributions of the cell's measured visible successes.
type RowTiming struct {
	TTFO             loadgen.Dist `json:"time_to_first_output_ms"`
	TTFT             loadgen.Dist `json:"ttft_ms"`
	TPOT             loadgen.Dist `json:"tpot_ms"`
	E2E              loadgen.Dist `json:"e2e_ms"`
	Decode           loadgen.Dist `json:"decode_tok_s"`
	Prefill          loadgen.Dist `json:"effective_prefill_tok_s"`
	PromptTokens     loadgen.Dist `json:"prompt_tokens"`
	CompletionTokens loadgen.Dist `json:"completion_tokens"`
}

// RowNative sums the native counter deltas of the measured blocks.
type RowNative struct {
	PromptTokens       *float64 `json:"prompt_tokens"`
	GenerationTokens   *float64 `json:"generation_tokens"`
	PrefixCacheQueries *float64 `json:"prefix_cache_queries"`
	PrefixCacheHits    *float64 `json:"prefix_cache_hits"`
	PrefixHitRate      *float64 `json:"prefix_cache_hit_rate"`
	Preemptions        *float64 `json:"preemptions"`
	CachedTokens       *int64   `json:"cached_tokens_reported"` // Σ usage.cached_tokens; null when never reported
	Missing            []string `json:"missing,omitempty"`
	Blocks             int      `json:"blocks"`
}

// RowConc is the concurrency the cell saw.
type RowConc struct {
	Requested         int    `json:"requested"`
	ClientObservedMax int    `json:"client_observed_max"`
	EngineRunningMax  *int   `json:"engine_running_max"`
	EngineWaitingMax  *int   `json:"engine_waiting_max"`
	EngineBasis       string `json:"engine_basis"`
}

// ArtefactRef is one file a row was computed from.
type ArtefactRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

type nativeDeltas struct {
	PromptTokens     float64  `json:"prompt_tokens"`
	GenerationTokens float64  `json:"generation_tokens"`
	PrefixQueries    float64  `json:"prefix_cache_queries"`
	PrefixHits       float64  `json:"prefix_cache_hits"`
	Preemptions      float64  `json:"preemptions"`
	Missing          []string `json:"missing"`
}

func (ev *evidence) readJSON(rel string, v any) error {
	b, err := os.ReadFile(filepath.Join(ev.dir, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// disposition decides a cell's disposition and reason from its blocks' records.
func disposition(c *cellRef, campaignEnded bool) (string, string) {
	var failed, blocked, deferred, pending []string
	for _, b := range c.Blocks {
		label := blockLabel(b)
		switch {
		case b.End == nil:
			pending = append(pending, label)
		case b.End.Status == engine.StatusFailed:
			failed = append(failed, fmt.Sprintf("%s failed (%s): %s", label, b.End.Class, firstLine(b.End.Message)))
		case b.End.Status == engine.StatusBlocked:
			why := firstLine(b.End.Message)
			if b.End.BlockedBy != "" && !strings.Contains(why, b.End.BlockedBy) {
				why = "blocked by " + b.End.BlockedBy + ": " + why
			}
			blocked = append(blocked, fmt.Sprintf("%s %s", label, why))
		case b.End.Status == engine.StatusDeferred:
			deferred = append(deferred, fmt.Sprintf("%s deferred: %s", label, firstLine(b.End.Message)))
		case b.stats != nil && b.stats.FailedN > 0:
			// The records are the authority: a failed request fails the cell whatever
			// the step's status says.
			failed = append(failed, fmt.Sprintf("%s: %d of %d requests failed though the step %s", label, b.stats.FailedN, b.stats.Attempted, b.End.Status))
		case b.End.Status == engine.StatusInterrupted:
			pending = append(pending, label+" interrupted")
		}
	}
	join := func(xs []string) string {
		if len(xs) > 2 {
			return strings.Join(xs[:2], "; ") + fmt.Sprintf("; and %d more", len(xs)-2)
		}
		return strings.Join(xs, "; ")
	}
	switch {
	case len(failed) > 0:
		return Failed, join(failed)
	case len(blocked) > 0:
		return Blocked, join(blocked)
	case len(deferred) > 0:
		return Deferred, join(deferred)
	case len(pending) > 0 && campaignEnded:
		return Blocked, "never ran: " + join(pending)
	case len(pending) > 0:
		return Pending, "not run yet: " + join(pending)
	}
	return Accepted, ""
}

func blockLabel(b *blockRef) string {
	if !b.measured() {
		return "priming"
	}
	return fmt.Sprintf("r%d", b.Repetition)
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return strings.TrimSpace(s)
}

// buildRow computes one cell's row.
func (ev *evidence) buildRow(c *cellRef) Row {
	row := Row{CellID: c.Key, Blocks: []RowBlk{}}
	row.Disposition, row.Reason = disposition(c, ev.ended != nil)
	row.Plan = ev.rowPlan(c)
	var vals [nMetrics][]float64
	var prompts []float64
	attempted, ok, maxConc, nBlocks := 0, 0, 0, 0
	var aggSum float64
	var cached int64
	cachedRep := 0
	native := &RowNative{}
	var nd [5]float64
	ndOK := [5]bool{true, true, true, true, true}
	missing := map[string]bool{}
	var ordered *blockRef
	for _, b := range c.Blocks {
		rb := RowBlk{Step: b.Addr, Phase: phaseOf(b), Repetition: b.Repetition, InStatistics: b.measured()}
		if b.End != nil {
			rb.Status, rb.Class, rb.Attempt = string(b.End.Status), string(b.End.Class), b.End.Attempt
		} else {
			rb.Status = Pending
		}
		if st := b.stats; st != nil {
			rb.Attempted, rb.VisibleSuccesses, rb.WallS, rb.AggregateTokS = st.Attempted, st.OK, st.WallS(), st.AggregateTokS()
			rb.TTFTp50, rb.TPOTp50 = st.TTFTp50, st.TPOTp50
			row.Artefacts = append(row.Artefacts, ArtefactRef{Path: st.Path, SHA256: st.SHA256, Bytes: st.Bytes})
			for _, f := range st.Failures {
				row.FailedRequestIDs = append(row.FailedRequestIDs, f.ID)
			}
		}
		row.Blocks = append(row.Blocks, rb)
		if !b.measured() || b.stats == nil {
			continue
		}
		st := b.stats
		nBlocks++
		attempted += st.Attempted
		ok += st.OK
		maxConc = max(maxConc, st.MaxConc)
		aggSum += st.AggregateTokS()
		cached += st.Cached
		cachedRep += st.CachedRep
		for m := range nMetrics {
			vals[m] = append(vals[m], st.vals[m]...)
		}
		for _, p := range st.prompts {
			prompts = append(prompts, p.v)
		}
		if ordered == nil {
			ordered = b
		}
		if a, found := b.artefact("native-deltas.json"); found {
			var d nativeDeltas
			if err := ev.readJSON(a.Path, &d); err == nil {
				native.Blocks++
				for _, m := range d.Missing {
					missing[m] = true
				}
				for i, v := range []float64{d.PromptTokens, d.GenerationTokens, d.PrefixQueries, d.PrefixHits, d.Preemptions} {
					nd[i] += v
				}
				row.Artefacts = append(row.Artefacts, ArtefactRef{Path: a.Path, SHA256: a.SHA256, Bytes: a.Size})
			}
		} else {
			ndOK = [5]bool{}
		}
		if a, found := b.artefact("gpu.jsonl"); found {
			row.Artefacts = append(row.Artefacts, ArtefactRef{Path: a.Path, SHA256: a.SHA256, Bytes: a.Size})
		}
	}
	if len(row.FailedRequestIDs) > 0 {
		sort.Strings(row.FailedRequestIDs)
	}
	if nBlocks == 0 {
		return row
	}
	row.Attempted, row.VisibleSuccesses = &attempted, &ok
	mean := aggSum / float64(nBlocks)
	row.AggregateTokS = &mean
	row.AggregateBasis = fmt.Sprintf("mean over %d measured block(s) of Σ completion tokens / block wall time; failed requests' tokens included", nBlocks)
	row.Timing = &RowTiming{
		TTFO: dist(vals[mTTFO]), TTFT: dist(vals[mTTFT]), TPOT: dist(vals[mTPOT]), E2E: dist(vals[mE2E]),
		Decode: dist(vals[mDecode]), Prefill: dist(vals[mPrefill]),
		PromptTokens: dist(vals[mPrompt]), CompletionTokens: dist(vals[mCompletion]),
	}
	if len(prompts) > 0 {
		sort.Float64s(prompts)
		pd := &PromptDist{Min: prompts[0], Max: prompts[len(prompts)-1], Samples: len(prompts),
			P50: loadgen.Percentile(prompts, 0.5), P95: loadgen.Percentile(prompts, 0.95), NominalContext: row.Plan.ContextTokens}
		pd.OrderedBlock = ordered.Addr
		for _, p := range ordered.stats.prompts {
			if len(pd.Ordered) == 256 {
				pd.OrderedCapped = true
				break
			}
			pd.Ordered = append(pd.Ordered, p.v)
		}
		row.ActualPromptTokens = pd
	}
	if native.Blocks > 0 && ndOK[0] {
		ptr := func(i int, name string) *float64 {
			if missing[name] {
				return nil
			}
			v := nd[i]
			return &v
		}
		native.PromptTokens = ptr(0, "vllm:prompt_tokens_total")
		native.GenerationTokens = ptr(1, "vllm:generation_tokens_total")
		native.PrefixCacheQueries = ptr(2, "vllm:prefix_cache_queries_total")
		native.PrefixCacheHits = ptr(3, "vllm:prefix_cache_hits_total")
		native.Preemptions = ptr(4, "vllm:num_preemptions_total")
		if native.PrefixCacheQueries != nil && native.PrefixCacheHits != nil && *native.PrefixCacheQueries > 0 {
			r := *native.PrefixCacheHits / *native.PrefixCacheQueries
			native.PrefixHitRate = &r
		}
		native.Missing = slices.Sorted(maps.Keys(missing))
	}
	if cachedRep > 0 {
		native.CachedTokens = &cached
	}
	row.Native = native
	row.Concurrency = &RowConc{Requested: c.Conc, ClientObservedMax: maxConc,
		EngineBasis: "not sampled: no gauge reading was taken during the measured blocks (native-samples.jsonl empty or absent)"}
	if em, ok := ev.cellEngineMax(c); ok {
		row.Concurrency.EngineRunningMax, row.Concurrency.EngineWaitingMax = &em.running, &em.waiting
		row.Concurrency.EngineBasis = fmt.Sprintf("max of %d native gauge samples taken during the measured blocks (native-samples.jsonl)", em.samples)
	}
	row.GPU = ev.cellGPU(c)
	return row
}

func dist(xs []float64) loadgen.Dist {
	// loadgen.Summarise copies; sort in place instead, the slice is ours.
	d := loadgen.Dist{Samples: len(xs), Descriptive: len(xs) < loadgen.DescriptiveBelow}
	if len(xs) == 0 {
		return d
	}
	sort.Float64s(xs)
	p := func(q float64) *float64 { v := loadgen.Percentile(xs, q); return &v }
	d.P50, d.P95, d.P99 = p(0.50), p(0.95), p(0.99)
	return d
}

func phaseOf(b *blockRef) string {
	if !b.measured() {
		return "priming"
	}
	if b.Phase == "" {
		return "measured"
	}
	return b.Phase
}

func (ev *evidence) rowPlan(c *cellRef) RowPlan {
	b := c.Blocks[0]
	rp := RowPlan{Matrix: c.Matrix, Arm: c.Arm, Concurrency: c.Conc, Target: text(b.Target["name"])}
	w := b.Workload
	rp.Workload, rp.Corpus = text(w["name"]), text(w["corpus"])
	rp.ContextTokens = int(num(w["nominal_context"]))
	if v, ok := w["max_tokens"]; ok && v != nil {
		n := int(num(v))
		rp.MaxTokens = &n
	}
	if v, ok := w["temperature"]; ok && v != nil {
		f := num(v)
		rp.Temperature = &f
	}
	if v, ok := w["top_p"]; ok && v != nil {
		f := num(v)
		rp.TopP = &f
	}
	rp.Reasoning = text(w["reasoning_effort"])
	for _, x := range c.Blocks {
		if x.measured() {
			rp.Repetitions++
		} else {
			rp.Priming = true
		}
	}
	// The planned count: the frozen value when the plan knew it, otherwise what the
	// measured blocks were sent (decided by a freeze step after the pilot).
	rp.Requests = b.Requests
	for _, x := range c.Blocks {
		if x.measured() && x.stats != nil {
			rp.Requests = x.stats.Attempted
			break
		}
	}
	if n, err := json.Number(b.Requests).Int64(); err == nil {
		rp.Requests = n
	}
	return rp
}
