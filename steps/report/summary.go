package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/stats"
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
	// OutageWindows lists every outage window of the journal, in the order they
	// opened (outage.go).
	OutageWindows []OutageWindow `json:"outage_windows"`
	// Diagnostics analyses the plan's trace and nsys captures (diagnostics.go);
	// absent when the plan has none.
	Diagnostics *Diagnostics `json:"diagnostics,omitempty"`
	// PromptReconstruction says per concurrency cell whether every arm sent the
	// identical corpus (corpus.go); absent when the plan has no matrix.
	PromptReconstruction *PromptReconstruction `json:"prompt_reconstruction,omitempty"`
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
	// Seed 003's names: accepted cells whose every measured block attempt passed
	// every validity check, and the block pairs (incumbent, candidate) the verdict
	// compared.
	AcceptedExpectedTerminal int `json:"accepted_expected_terminal"`
	MatchedLatencyPairs      int `json:"matched_latency_pairs"`
	// Method states how effects, drift and intervals are computed.
	Method   string         `json:"method"`
	Drift    []Drift        `json:"drift"`
	Effects  []Effect       `json:"effects"`
	Validity ValiditySum    `json:"validity"`
	Energy   EnergySum      `json:"energy"`
	Power    *PowerEstimate `json:"power,omitempty"`
	Retries  []string       `json:"retries"`
}

// Effect is one comparison's estimate, as the verdict used it.
type Effect struct {
	Role     string   `json:"role"`
	Cell     string   `json:"cell"`
	Metric   string   `json:"metric"`
	Pairs    int      `json:"pairs"`
	Gain     *float64 `json:"gain"`
	Lo       *float64 `json:"lo"`
	Hi       *float64 `json:"hi"`
	Method   string   `json:"method,omitempty"`
	Eligible bool     `json:"eligible"`
}

// ValiditySum counts block attempts by validity.
type ValiditySum struct {
	Checks        []string `json:"checks"`
	BlocksChecked int      `json:"blocks_checked"`
	BlocksFailed  int      `json:"blocks_failed"`
	Failures      []string `json:"failures"`
}

// EnergySum says where energy figures come from.
type EnergySum struct {
	Blocks    int    `json:"blocks_with_energy"`
	Simulated bool   `json:"simulated"`
	Source    string `json:"source,omitempty"`
	Basis     string `json:"basis"`
}

// CellEnergy is a cell's energy over its measured blocks.
type CellEnergy struct {
	Blocks               int     `json:"blocks"`
	Simulated            bool    `json:"simulated"`
	JoulesPerOutputToken float64 `json:"joules_per_output_token"` // mean of the blocks'
	JoulesPerRequest     float64 `json:"joules_per_request"`
	MeanPowerW           float64 `json:"mean_power_w_per_gpu"` // mean over blocks and GPUs
	PeakPowerW           float64 `json:"peak_power_w"`
	SamplingIntervalS    float64 `json:"sampling_interval_s"` // largest of the blocks'
	MinCoverage          float64 `json:"min_coverage"`
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
	VisibleSuccesses   *int        `json:"visible_successes,omitempty"`
	Attempted          *int        `json:"attempted,omitempty"`
	ActualPromptTokens *PromptDist `json:"actual_prompt_tokens,omitempty"`
	AggregateTokS      *float64    `json:"aggregate_output_throughput_tok_s,omitempty"`
	AggregateBasis     string      `json:"aggregate_output_throughput_basis,omitempty"`
	Timing             *RowTiming  `json:"timing,omitempty"`
	Native             *RowNative  `json:"native,omitempty"`
	Concurrency        *RowConc    `json:"concurrency,omitempty"`
	GPU                []GPUDevice `json:"gpu,omitempty"`
	Energy             *CellEnergy `json:"energy,omitempty"`
	// Tails are distribution-free 95% intervals for p90/p95/p99 of TTFT, TPOT and
	// E2E, each with the sample count that certifies it.
	Tails    map[string][]stats.QuantileBound `json:"tails,omitempty"`
	Validity *RowValidity                     `json:"validity,omitempty"`
	Retries  []string                         `json:"retries,omitempty"`
	// Cache is what the cell's blocks recorded of the prefix cache (cache.go);
	// absent in evidence from before blocks recorded it.
	Cache *RowCache `json:"cache,omitempty"`
	// Observed is absent when no capture ran during a measured block of the cell.
	Observed         *RowObserved  `json:"observed,omitempty"`
	Artefacts        []ArtefactRef `json:"artefacts,omitempty"`
	FailedRequestIDs []string      `json:"failed_request_ids,omitempty"`
}

// RowValidity sums the validity of a cell's measured block attempts.
type RowValidity struct {
	Blocks int      `json:"blocks"`
	Passed int      `json:"passed"`
	Failed []string `json:"failed"`
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
	AggregateTokS    *float64 `json:"aggregate_output_tok_s"`
	TTFTp50          *float64 `json:"ttft_ms_p50"`
	TPOTp50          *float64 `json:"tpot_ms_p50"`
	InStatistics     bool     `json:"in_statistics"`
	// CorpusSHA256 is the digest of the prompts the attempt rendered (result.json).
	CorpusSHA256 string `json:"corpus_sha256,omitempty"`
	// ObservedBy names the captures that ran during the block (observed.go).
	ObservedBy []string `json:"observed_by,omitempty"`
	// Retry is true for an attempt after the block's first: both stay in the
	// population. Missing counts declared requests the attempt left no record of.
	Retry    bool           `json:"retry,omitempty"`
	Missing  int            `json:"missing_requests,omitempty"`
	Validity *BlockValidity `json:"validity,omitempty"`
	Energy   *BlockEnergy   `json:"energy,omitempty"`
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
	// RequestSuccess counts vllm:request_success_total by finished_reason.
	RequestSuccess map[string]float64 `json:"request_success_by_finished_reason"`
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
		// An attempt that did not settle the step (interrupted by a crash or a
		// signal) keeps its population: what it lost are failures of the cell.
		for _, a := range b.population() {
			if a != b.settling() && a.stats.FailedN > 0 {
				failed = append(failed, fmt.Sprintf("%s attempt %d %s: %d of %d requests failed or never completed", label, a.N, a.endLabel(), a.stats.FailedN, a.stats.Attempted))
			}
		}
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
	row.Observed = rowObserved(c)
	row.Cache = cellCache(c)
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
	var energies []*BlockEnergy
	valid := &RowValidity{Failed: []string{}}
	for _, b := range c.Blocks {
		if len(b.attempts) == 0 {
			row.Blocks = append(row.Blocks, RowBlk{Step: b.Addr, Phase: phaseOf(b), Repetition: b.Repetition, InStatistics: b.inStatistics(), Status: Pending})
			continue
		}
		if b.retried() {
			row.Retries = append(row.Retries, blockLabel(b)+": "+attemptsLine(b))
		}
		for i, a := range b.attempts {
			rb := RowBlk{Step: b.Addr, Phase: phaseOf(b), Repetition: b.Repetition, InStatistics: b.inStatistics(), Attempt: a.N,
				ObservedBy: b.observedBy, Retry: i > 0, Missing: a.Missing, Validity: a.validity, Energy: a.energy, Status: "open"}
			if a.End != nil {
				rb.Status, rb.Class = string(a.End.Status), string(a.End.Class)
			}
			if a.corpus != nil {
				rb.CorpusSHA256 = a.corpus.SHA256
			}
			st := a.stats
			if st != nil {
				agg := st.AggregateTokS()
				rb.Attempted, rb.VisibleSuccesses, rb.WallS, rb.AggregateTokS = st.Attempted, st.OK, st.WallS(), &agg
				rb.TTFTp50, rb.TPOTp50 = st.TTFTp50, st.TPOTp50
				if st.SHA256 != "" {
					row.Artefacts = append(row.Artefacts, ArtefactRef{Path: st.Path, SHA256: st.SHA256, Bytes: st.Bytes})
				}
				for _, f := range st.Failures {
					row.FailedRequestIDs = append(row.FailedRequestIDs, f.ID)
				}
			}
			row.Blocks = append(row.Blocks, rb)
			if !b.inStatistics() || st == nil {
				continue
			}
			// Every attempt's records are the cell's population.
			attempted += st.Attempted
			ok += st.OK
			maxConc = max(maxConc, st.MaxConc)
			cached += st.Cached
			cachedRep += st.CachedRep
			for m := range nMetrics {
				vals[m] = append(vals[m], st.vals[m]...)
			}
			for _, p := range st.prompts {
				prompts = append(prompts, p.v)
			}
			if a.validity != nil {
				valid.Blocks++
				if a.validity.OK {
					valid.Passed++
				} else {
					for _, f := range a.validity.failed() {
						valid.Failed = append(valid.Failed, fmt.Sprintf("%s attempt %d %s", blockLabel(b), a.N, f))
					}
				}
			}
			if art, found := a.artefact("native-deltas.json"); found {
				var d nativeDeltas
				if err := ev.readJSON(art.Path, &d); err == nil {
					native.Blocks++
					for _, m := range d.Missing {
						missing[m] = true
					}
					for i, v := range []float64{d.PromptTokens, d.GenerationTokens, d.PrefixQueries, d.PrefixHits, d.Preemptions} {
						nd[i] += v
					}
					row.Artefacts = append(row.Artefacts, ArtefactRef{Path: art.Path, SHA256: art.SHA256, Bytes: art.Size})
				}
			} else {
				ndOK = [5]bool{}
			}
			if art, found := a.artefact("gpu.jsonl"); found {
				row.Artefacts = append(row.Artefacts, ArtefactRef{Path: art.Path, SHA256: art.SHA256, Bytes: art.Size})
			}
			// Block-level figures (aggregate, ordered prompts, energy) are the
			// settling attempt's; an interrupted attempt has no such figure.
			if a != b.settling() {
				continue
			}
			nBlocks++
			aggSum += st.AggregateTokS()
			if ordered == nil {
				ordered = b
			}
			if a.energy != nil {
				energies = append(energies, a.energy)
			}
		}
	}
	if valid.Blocks > 0 {
		row.Validity = valid
	}
	if len(row.FailedRequestIDs) > 0 {
		sort.Strings(row.FailedRequestIDs)
	}
	if attempted > 0 {
		row.Attempted, row.VisibleSuccesses = &attempted, &ok
	}
	if nBlocks == 0 || row.Disposition == Failed {
		// Seed 003: a failed cell carries its counts and reasons, no headline figure.
		return withoutFigures(row)
	}
	mean := aggSum / float64(nBlocks)
	row.AggregateTokS = &mean
	row.AggregateBasis = fmt.Sprintf("mean over %d measured block(s) of Σ completion tokens of the completed requests / block wall time (each block's result.json figure)", nBlocks)
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
	row.Energy = cellEnergy(energies)
	row.Tails = map[string][]stats.QuantileBound{}
	for _, m := range []int{mTTFT, mTPOT, mE2E} {
		for _, p := range []float64{0.90, 0.95, 0.99} {
			row.Tails[metricNames[m]] = append(row.Tails[metricNames[m]], stats.QuantileInterval(vals[m], p, Level))
		}
	}
	return row
}

// withoutFigures strips a row down to its counts, reasons and evidence.
func withoutFigures(row Row) Row {
	if row.Disposition != Failed {
		return row
	}
	for i := range row.Blocks {
		row.Blocks[i].AggregateTokS, row.Blocks[i].TTFTp50, row.Blocks[i].TPOTp50, row.Blocks[i].Energy = nil, nil, nil, nil
	}
	return row
}

// attemptsLine describes every attempt of a retried block.
func attemptsLine(b *blockRef) string {
	var parts []string
	for _, a := range b.attempts {
		s := fmt.Sprintf("attempt %d %s", a.N, a.endLabel())
		if a.stats != nil {
			s += fmt.Sprintf(", %d of %d requests recorded", a.stats.Attempted-a.Missing, a.stats.Attempted)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ") + "; every attempt stays in the population"
}

// cellEnergy is the mean over a cell's measured blocks.
func cellEnergy(es []*BlockEnergy) *CellEnergy {
	var ce CellEnergy
	var w float64
	nw := 0
	ce.MinCoverage = 1
	for _, e := range es {
		if e.JoulesPerOutputToken == nil || e.JoulesPerRequest == nil {
			continue
		}
		ce.Blocks++
		ce.Simulated = ce.Simulated || e.Simulated
		ce.JoulesPerOutputToken += *e.JoulesPerOutputToken
		ce.JoulesPerRequest += *e.JoulesPerRequest
		ce.SamplingIntervalS = math.Max(ce.SamplingIntervalS, e.IntervalS)
		ce.MinCoverage = math.Min(ce.MinCoverage, e.Coverage)
		for _, d := range e.Devices {
			w += d.MeanW
			nw++
			ce.PeakPowerW = math.Max(ce.PeakPowerW, d.PeakW)
		}
	}
	if ce.Blocks == 0 {
		return nil
	}
	ce.JoulesPerOutputToken /= float64(ce.Blocks)
	ce.JoulesPerRequest /= float64(ce.Blocks)
	ce.MeanPowerW = w / float64(nw)
	return &ce
}

func dist(xs []float64) loadgen.Dist {
	// loadgen.Summarise copies; sort in place instead, the slice is ours.
	d := loadgen.NewDist(len(xs))
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
