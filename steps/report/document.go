package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// document assembles the report's sections (seed 002's shape) from the evidence.
func (r *Report) document(charts []chart) *document {
	s := &r.Summary
	d := &document{title: fmt.Sprintf("%s: evidence report", s.Campaign)}
	st := s.Statistics

	r.firstScreen(d)
	r.glanceSection(d)

	// Result card.
	card := d.add("result-card", "Result card")
	t := &table{head: []string{"Setup", "Value"}}
	t.rows = append(t.rows, []string{"Targets", r.targetsLine()})
	t.rows = append(t.rows, []string{"GPUs", r.gpusLine()})
	t.rows = append(t.rows, []string{"Workload contract", r.contractLine()})
	t.rows = append(t.rows, []string{"Measurement path", r.pathLine()})
	t.rows = append(t.rows, []string{"Evidence", fmt.Sprintf("%d cells required: %d accepted, %d failed, %d blocked, %d deferred, %d pending. %d blocks with records; in the matrices %s/%s requests produced visible output including priming; measured repetitions %s/%s. %d priming requests are excluded from every figure.",
		st.RequiredCells, st.AcceptedCells, st.FailedCells, st.BlockedCells, st.DeferredCells, st.PendingCells, st.Blocks,
		fmtInt(st.SucceededRequests), fmtInt(st.AttemptedRequests), fmtInt(st.MeasuredSucceeded), fmtInt(st.MeasuredAttempted), st.RequestsNotInStatistics)})
	if st.OtherBlocksAttempted > 0 {
		// The blocks counted above include those outside a matrix (pilots); their
		// requests are not in the matrix counts.
		t.rows[len(t.rows)-1][1] += fmt.Sprintf(" Blocks outside a matrix (pilots and the like) sent %s more requests, %s with visible output, not counted above.",
			fmtInt(st.OtherBlocksAttempted), fmtInt(st.OtherBlocksSucceeded))
	}
	if n := r.ev.observedExcluded(); n > 0 {
		t.rows[len(t.rows)-1][1] += fmt.Sprintf(" %d measured block(s) a capture ran during are excluded from their cells' figures.", n)
	}
	t.rows = append(t.rows, []string{"Decision", s.Promotion.Verdict + "."})
	card.tab(t)

	r.measuredSection(d)
	r.decisionSection(d)
	r.noiseSection(d, charts)
	r.validitySection(d)
	r.agentsSection(d)
	r.energySection(d)
	r.distributionSection(d)
	r.tailsSection(d)
	r.failuresSection(d)
	r.diagnosticsSection(d)
	r.coverageSection(d)
	r.amendmentsSection(d)
	r.gpuSection(d)
	r.closureSection(d)
	r.identitiesSection(d)
	if len(charts) > 0 {
		cs := d.add("charts", "Charts")
		cs.p("Machine-derived charts; each states its data source. They show natural output, not fixed-token work; where arms run different executable images, differences between them are observations of the stacks as run, not causal measurements of a component.")
		for i := range charts {
			if charts[i].Name != "noise_drift" { // shown in its own section
				cs.elems = append(cs.elems, elem{chart: &charts[i]})
			}
		}
	}
	notes := d.add("interpretation", "Interpretation rules")
	notes.list([]string{
		"Priming blocks are recorded but excluded from every figure; priming is not proof of cache reuse.",
		"Cache reuse is stated only from native prefix-cache counters and usage.cached_tokens, never from the word warm.",
		fmt.Sprintf("A percentile over fewer samples than certify it (%d for p99, one-sided %s, MLPerf LoadGen's early-stopping count) is descriptive only, is marked so, and never enters a rule.", stats.CertifiedMin(0.99, stats.CertifyConfidence), pct(stats.CertifyConfidence)),
		"Repetitions (blocks), not requests, are the unit of replication: effects and drift are over paired block figures, never over requests as replicates.",
		"Capacity TPOT is generation duration divided by the completion tokens after the first; it is not a distribution of token gaps. Decode tok/s is its inverse.",
		"Every failed request stays in its denominator; a cell with any failure is withheld from ranking and survivors are not substituted into a score. An attempt interrupted by a crash or a signal stays in its cell's population: its records count, and the requests it never completed count as cancelled failures; a re-attempt is listed as a retry beside the cell, never as a replacement.",
		"Arms that run different executable images support no causal claim about a component: a difference is an observation of the stacks as run.",
		"This is natural output, not fixed-token work: output lengths vary per request.",
	})
	r.gpuBlocksSection(d)
	return d
}

func (r *Report) restoreLine() string {
	for _, in := range r.ev.plan.Instances {
		if in.Type != "restore" {
			continue
		}
		e := r.ev.final[in.Addr]
		if e == nil {
			return fmt.Sprintf("Restore %s has not run.", in.Addr)
		}
		if e.Status == engine.StatusSucceeded {
			return fmt.Sprintf("Restore %s succeeded.", in.Addr)
		}
		return fmt.Sprintf("Restore %s %s (%s): %s.", in.Addr, e.Status, e.Class, firstLine(e.Message))
	}
	return "The plan has no restore step."
}

// targetImages maps target name to the image IDs its deploy/restore steps saw.
func (r *Report) targetImages() (names []string, images map[string][]string, containers map[string]string) {
	images, containers = map[string][]string{}, map[string]string{}
	seen := map[string]bool{}
	for _, in := range r.ev.plan.Instances {
		tg, _ := in.Config["target"].(map[string]any)
		if tg == nil {
			continue
		}
		name := text(tg["name"])
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
			containers[name] = text(tg["container"])
		}
		if in.Type != "deploy" && in.Type != "restore" {
			continue
		}
		out := r.ev.stepOutputs(in.Addr)
		id := text(out["image_id"])
		if id == "" {
			continue
		}
		dup := false
		for _, x := range images[name] {
			dup = dup || strings.HasPrefix(x, id+" ")
		}
		if !dup {
			images[name] = append(images[name], id+" ("+in.Addr+")")
		}
	}
	return names, images, containers
}

func (r *Report) targetsLine() string {
	names, images, containers := r.targetImages()
	var parts []string
	for _, n := range names {
		img := "image not observed"
		if len(images[n]) > 0 {
			img = "image " + strings.Join(images[n], ", ")
		}
		parts = append(parts, fmt.Sprintf("%s: container %s, %s", n, containers[n], img))
	}
	if len(parts) == 0 {
		return "no targets"
	}
	return strings.Join(parts, "; ") + "."
}

func (r *Report) gpusLine() string {
	if len(r.ev.gpuSamples) == 0 {
		return "No GPU telemetry was recorded (no block kept a gpu.jsonl); power, temperature and clocks are not observed in this evidence."
	}
	var parts []string
	for _, g := range devices(r.ev.gpuSamples) {
		s := "GPU " + g.Device
		if g.Name != "" {
			s += " " + g.Name
		}
		if g.Driver != "" {
			s += ", driver " + g.Driver
		}
		if len(g.PowerLimitW) > 0 {
			s += ", power limit " + joinF(g.PowerLimitW, "/") + " W"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ") + ". Power is observed, never set."
}

func joinF(xs []float64, sep string) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmtF(x, 0))
	}
	return strings.Join(s, sep)
}

func (r *Report) contractLine() string {
	var parts []string
	seen := map[string]bool{}
	for _, row := range r.Summary.Rows {
		p := row.Plan
		if seen[p.Matrix] {
			continue
		}
		seen[p.Matrix] = true
		s := fmt.Sprintf("matrix %s: workload %s (corpus %s), nominal context %s tokens", p.Matrix, p.Workload, p.Corpus, fmtInt(p.ContextTokens))
		lo, hi, n := 0.0, 0.0, 0
		for _, x := range r.Summary.Rows {
			if x.Plan.Matrix != p.Matrix || x.ActualPromptTokens == nil {
				continue
			}
			if n == 0 || x.ActualPromptTokens.Min < lo {
				lo = x.ActualPromptTokens.Min
			}
			if n == 0 || x.ActualPromptTokens.Max > hi {
				hi = x.ActualPromptTokens.Max
			}
			n++
		}
		if n > 0 {
			s += fmt.Sprintf(", actual prompt tokens %s–%s", fmtInt(int(lo)), fmtInt(int(hi)))
		} else {
			s += ", actual prompt tokens not observed"
		}
		if p.MaxTokens != nil {
			s += fmt.Sprintf("; output cap %s", fmtInt(*p.MaxTokens))
		}
		if p.Temperature != nil {
			s += fmt.Sprintf(", temperature %g", *p.Temperature)
		}
		if p.TopP != nil {
			s += fmt.Sprintf(", top-p %g", *p.TopP)
		}
		if p.Reasoning != "" {
			s += ", reasoning effort " + p.Reasoning
		}
		parts = append(parts, s+"; "+naturalOutput)
	}
	if len(parts) == 0 {
		return "no matrix"
	}
	return strings.Join(parts, ". ") + "."
}

func (r *Report) pathLine() string {
	byConc := map[int]string{}
	reps, priming := 0, false
	for _, row := range r.Summary.Rows {
		reps = max(reps, row.Plan.Repetitions)
		priming = priming || row.Plan.Priming
		if _, ok := byConc[row.Plan.Concurrency]; !ok {
			byConc[row.Plan.Concurrency] = text(row.Plan.Requests)
		}
	}
	var concs []int
	for c := range byConc {
		concs = append(concs, c)
	}
	sort.Ints(concs)
	var per []string
	for _, c := range concs {
		per = append(per, fmt.Sprintf("C%d: %s requests per block", c, byConc[c]))
	}
	s := fmt.Sprintf("Closed loop against each arm's endpoint; %d measured repetition(s) per arm × concurrency", reps)
	if priming {
		s = fmt.Sprintf("Closed loop against each arm's endpoint; one priming block then %d measured repetition(s) per arm × concurrency", reps)
	}
	return s + " (" + strings.Join(per, ", ") + "). Request IDs are deterministic per repetition."
}

func (r *Report) measuredSection(d *document) {
	s := d.add("measured-results", "Measured results")
	s.p("Mean block aggregate output throughput across the measured repetitions; TTFT and TPOT columns are the range (min–max) of the block medians in milliseconds. These are natural outputs, not fixed-token decode rates. A cell with any failed request is withheld and carries no headline figure, only its counts and reasons. Priming blocks are excluded.")
	t := &table{head: []string{"Arm", "C", "Visible successes / attempted", "Mean block tok/s", "TTFT p50 range, ms", "TPOT p50 range, ms", "Validity", "Retries (every attempt counts)", "Disposition"}}
	var notes []string
	anyFailed := false
	multi := map[string]bool{}
	for _, row := range r.Summary.Rows {
		multi[row.Plan.Matrix] = true
	}
	for _, row := range r.Summary.Rows {
		arm := row.Plan.Arm
		if len(multi) > 1 {
			arm = row.Plan.Matrix + "/" + arm
		}
		vis, tok, ttft, tpot := "—", "—", "—", "—"
		if row.Attempted != nil {
			vis = fmt.Sprintf("%s/%s", fmtInt(*row.VisibleSuccesses), fmtInt(*row.Attempted))
			ttft = blockRange(row.Blocks, func(b RowBlk) *float64 { return b.TTFTp50 })
			tpot = blockRange(row.Blocks, func(b RowBlk) *float64 { return b.TPOTp50 })
		}
		if row.AggregateTokS != nil {
			tok = tokS(*row.AggregateTokS)
		}
		disp := row.Disposition
		if row.Disposition != Accepted {
			anyFailed = anyFailed || row.Disposition == Failed
			if row.Attempted != nil {
				notes = append(notes, fmt.Sprintf("[%d] %s: %s", len(notes)+1, row.CellID, r.withheldNote(row)))
				tok = fmt.Sprintf("withheld [%d]", len(notes))
			}
		}
		valid := "—"
		if row.Validity != nil {
			valid = fmt.Sprintf("%d/%d pass", row.Validity.Passed, row.Validity.Blocks)
		}
		retries := "—"
		if len(row.Retries) > 0 {
			retries = strings.Join(row.Retries, " ")
		}
		t.rows = append(t.rows, []string{arm, fmt.Sprint(row.Plan.Concurrency), vis, tok, ttft, tpot, valid, retries, disp})
	}
	s.tab(t)
	s.list(notes)
	var observed []string
	for _, row := range r.Summary.Rows {
		if row.Observed != nil {
			observed = append(observed, row.CellID+": "+row.Observed.Note+".")
		}
	}
	if len(observed) > 0 {
		s.p("Blocks a trace or nsys capture ran during (its overlap.json, or its UTC window on the same container) are not clean data:")
		s.list(observed)
	}
	if anyFailed {
		s.p("No overall winner: at least one arm has a failed cell, so no ranking is computed and survivors are not substituted into a winning score.")
	} else {
		s.p("No overall winner is declared by this table; only the pre-registered decision rule below may promote a candidate.")
	}
}

func (r *Report) withheldNote(row Row) string {
	if len(row.FailedRequestIDs) == 0 {
		return row.Disposition + ": " + row.Reason
	}
	ids := row.FailedRequestIDs
	more := ""
	if len(ids) > 10 {
		more = fmt.Sprintf(" and %d more", len(ids)-10)
		ids = ids[:10]
	}
	return fmt.Sprintf("%s; failed request(s) %s%s (priming included in this list)", row.Reason, strings.Join(ids, ", "), more)
}

func blockRange(bs []RowBlk, f func(RowBlk) *float64) string {
	lo, hi, n := 0.0, 0.0, 0
	for _, b := range bs {
		v := f(b)
		if !b.InStatistics || v == nil {
			continue
		}
		if n == 0 || *v < lo {
			lo = *v
		}
		if n == 0 || *v > hi {
			hi = *v
		}
		n++
	}
	if n == 0 {
		return "—"
	}
	return fmtMS(lo) + "–" + fmtMS(hi)
}

func (r *Report) distributionSection(d *document) {
	s := d.add("distributions", "Distributions and counters per cell")
	s.p("Per-request distributions over the measured visible successes of each cell (p50 / p95 / p99, n = samples; a percentile over fewer samples than certify it (%d for p50, %d for p95, %d for p99) is marked %s, descriptive). TTFO counts the first output token of any kind, visible TTFT the first content token. Effective prefill tok/s = prompt tokens / TTFO. Failed cells carry no distribution.", loadgen.CertifiedFrom(0.50), loadgen.CertifiedFrom(0.95), loadgen.CertifiedFrom(0.99), descMark)
	t := &table{head: []string{"Cell", "n", "TTFO ms", "Visible TTFT ms", "Capacity TPOT ms", "E2E ms", "Decode tok/s", "Effective prefill tok/s", "Completion tokens"}}
	c := &table{head: []string{"Cell", "Prompt tokens min / p50 / p95 / max", "Prefix-cache queries", "Prefix-cache hits", "Hit rate", "Σ cached_tokens", "Plan expects", "Contradicted", "Cache at start", "Client max concurrency", "Engine max running / waiting"}}
	for _, row := range r.Summary.Rows {
		if row.Timing == nil {
			continue
		}
		tm := row.Timing
		t.rows = append(t.rows, []string{row.CellID, fmt.Sprint(tm.TTFT.Samples), distText(tm.TTFO, fmtMS), distText(tm.TTFT, fmtMS), distText(tm.TPOT, fmtMS), distText(tm.E2E, fmtMS),
			distText(tm.Decode, tokS), distText(tm.Prefill, tokS), distText(tm.CompletionTokens, tokens)})
		pt := "—"
		if p := row.ActualPromptTokens; p != nil {
			pt = fmt.Sprintf("%s / %s / %s / %s", tokens(p.Min), tokens(p.P50), tokens(p.P95), tokens(p.Max))
		}
		n := row.Native
		hr := "—"
		if n.PrefixHitRate != nil {
			hr = hitRate(*n.PrefixHitRate)
		}
		cached := "not reported"
		if n.CachedTokens != nil {
			cached = fmtInt(int(*n.CachedTokens))
		}
		c.rows = append(c.rows, []string{row.CellID, pt, fmtPtr(n.PrefixCacheQueries, func(x float64) string { return fmtInt(int(x)) }),
			fmtPtr(n.PrefixCacheHits, func(x float64) string { return fmtInt(int(x)) }), hr, cached, row.Cache.expectedText(), row.Cache.contradictedText(), row.Cache.startText(row.Plan.Arm),
			fmt.Sprint(row.Concurrency.ClientObservedMax), engineMaxText(row.Concurrency)})
	}
	if len(t.rows) == 0 {
		s.p("No measured block left records.")
		return
	}
	t.markLegend(fmt.Sprintf("%s descriptive: a percentile over fewer samples than certify it (%d for p50, %d for p95, %d for p99); it never enters a rule.", descMark, loadgen.CertifiedFrom(0.50), loadgen.CertifiedFrom(0.95), loadgen.CertifiedFrom(0.99)))
	s.tab(t)
	s.p("Cache reuse below comes from the native counter deltas summed over the measured blocks and from usage.cached_tokens; engine running/waiting maxima come from the engine's own gauges read during the measured blocks (native-samples.jsonl), “not sampled” where no reading was taken. “Plan expects” is the cache state each measured block expected its corpus to find (result.json: cache.expected, from the plan's expect_cache or the corpus protocol); “Contradicted” counts the measured blocks whose counters contradicted it. “Cache at start” is where the cell's first block found the cache (result.json: cache.start): reset by the block, a fresh server, carried over from the arm's own blocks or from traffic no completed block on its container accounts for, or inherited from another arm's blocks on the same container (another matrix's arm of the same name included), named with the block it came from.")
	s.tab(c)
	var contradictions, inherited []string
	for _, row := range r.Summary.Rows {
		cc := row.Cache
		if cc == nil {
			continue
		}
		if cc.FirstContradiction != "" {
			contradictions = append(contradictions, fmt.Sprintf("%s: %s (%s).", row.CellID, cc.FirstContradiction, cc.FirstContradictionBlock))
		}
		for _, p := range cc.PrimingContradictions {
			contradictions = append(contradictions, fmt.Sprintf("%s, priming: %s.", row.CellID, strings.TrimSuffix(p, ".")))
		}
		for _, in := range cc.Inherited {
			inherited = append(inherited, fmt.Sprintf("%s: %s attempt %d started from the cache of %s, not from a state of its own.", row.CellID, in.Block, in.Attempt, in.text()))
		}
	}
	if len(contradictions) > 0 {
		s.p("Where the counters contradict the plan, the first measured block's words, and every priming block's:")
		s.list(contradictions)
	}
	if len(inherited) > 0 {
		s.p("Arms that inherited another arm's cache (no reset before their block; the server had served the other arm):")
		s.list(inherited)
	}
}

// distText prints p50 / p95 / p99 of a distribution, each marked descriptive
// (descMark) when the distribution says too few samples certify it.
func distText(d loadgen.Dist, f func(float64) string) string {
	if d.Samples == 0 {
		return "—"
	}
	var parts []string
	for _, q := range []struct {
		name string
		v    *float64
	}{{"p50", d.P50}, {"p95", d.P95}, {"p99", d.P99}} {
		s := f(*q.v)
		if slices.Contains(d.DescriptivePercentiles, q.name) {
			s += descMark
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " / ")
}

// tokens prints a token count (a percentile of one may fall between two counts).
func tokens(x float64) string {
	if x == math.Trunc(x) {
		return fmtInt(int(x))
	}
	return fmtF(x, 1)
}

func (r *Report) decisionSection(d *document) {
	v := r.Summary.Promotion
	s := d.add("decision", "Decision rule and verdict")
	if v.Rule == nil {
		s.p("No decision rule was pre-registered in the campaign: nothing is promoted and no ranking is made.")
		return
	}
	ru := v.Rule
	kind := "Pre-registered rule"
	if v.PostHoc {
		kind = fmt.Sprintf("Rule (%s: amendment %s touches it after measured data existed)", PostHocLabel, joinInts(v.PostHocAmendments))
	}
	s.p("%s %q: matrix %s; primary metric %s; baseline arm %s, candidate arm %s, drift-control arm %s; primary cells %s need a gain of at least %s; %s; %d matched repetition(s) per cell; criterion %q; drift bound %s (%s). Any failed request in a compared arm or in the drift-control arm, and any block that fails a validity check, makes the comparison ineligible.",
		kind, ru.Name, ru.Matrix, ru.PrimaryMetric, ru.BaselineArm, ru.CandidateArm, orText(v.DriftArm, "(none)"), strings.Join(ru.PrimaryCells, ", "), pct(ru.MinGain),
		protectedText(ru.ProtectedCells, ru.MaxProtectedRegression), ru.MatchedRepetitions, ru.Criterion, pct(v.MaxDrift), v.MaxDriftBasis)
	s.p("Per repetition, gain = candidate / baseline − 1 when higher is better and 1 − candidate / baseline when lower is better, the baseline being %s. The effect is the mean gain; its 95%% interval is Student's t over the per-repetition gains (a bootstrap over blocks when there are at least %d and their skewness exceeds %g). Both criteria are shown so a reader can redo either.", baselineText(ru.BaselineArm, v.DriftArm), stats.BootstrapMinN, stats.SkewLimit)
	t := &table{head: []string{"Role", "Cell", "Repetitions: baseline vs candidate → gain", "Mean gain", "95% interval", "Criterion", "Point would hold", "Interval would hold", "Decided by", "Holds"}}
	for _, c := range v.Comparisons {
		gain, iv, holds, dec := "—", "—", "ineligible: "+c.Ineligible, "—"
		if c.Gain != nil {
			gain = pm(*c.Gain)
		}
		if c.Interval != nil {
			iv = ivText(c.Interval)
		}
		if c.Eligible {
			holds = yesNo(c.Holds)
			dec = fmt.Sprintf("%s = %s", c.Decided, pm(*c.DecidingValue))
		}
		hp, hi := "—", "—"
		if c.HoldsPoint != nil {
			hp = yesNo(*c.HoldsPoint)
		}
		if c.HoldsInterval != nil {
			hi = yesNo(*c.HoldsInterval)
		}
		t.rows = append(t.rows, []string{c.Role, c.Cell, pairsText(c), gain, iv, c.Criterion, hp, hi, dec, holds})
	}
	s.tab(t)
	s.p("Verdict: %s. promoted = %t.", v.Verdict, v.Promoted)
	s.list(v.Reasons)
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "(none)"
	}
	return strings.Join(xs, ", ")
}

func (r *Report) failuresSection(d *document) {
	s := d.add("failures", "Failures")
	t := &table{head: []string{"Request", "Block", "Class", "Finish reason", "Prompt / completion / reasoning tokens", "Chunks (reasoning / content)", "Error excerpt"}}
	total, listed := 0, 0
	for _, b := range r.ev.blocks {
		for _, a := range b.population() {
			total += a.stats.FailedN
			for _, f := range a.stats.Failures {
				listed++
				tok := "no usage"
				if f.PromptTokens != nil {
					rt := "not reported"
					if f.ReasoningTokens != nil {
						rt = fmt.Sprint(*f.ReasoningTokens)
					}
					tok = fmt.Sprintf("%d / %d / %s", *f.PromptTokens, *f.CompletionTokens, rt)
				}
				fr := f.FinishReason
				if fr == "" {
					fr = "none"
				}
				cls := string(f.Outcome)
				if f.HTTPStatus != 0 && f.HTTPStatus != 200 {
					cls += fmt.Sprintf(" (HTTP %d)", f.HTTPStatus)
				}
				blk := f.Block
				if b.retried() {
					blk += fmt.Sprintf(" attempt %d", a.N)
				}
				t.rows = append(t.rows, []string{f.ID, blk, cls, fr, tok, fmt.Sprintf("%d / %d", f.ReasoningChunks, f.ContentChunks), orDash(f.Error)})
			}
		}
	}
	if total == 0 {
		s.p("No request failed.")
	} else {
		s.p("%d request(s) failed, including priming and requests an interrupted attempt never completed; each stays in its block's population (a measured block's in its cell's denominator); a block run again after an interruption counts the new attempt beside the failed one, never in its place.", total)
		if listed < total {
			s.p("The first %d failures per block are listed (%d of %d); requests.jsonl keeps every one.", maxFailuresKept, listed, total)
		}
		s.tab(t)
	}
	var stops []string
	for _, addr := range r.ev.stepAddrs() {
		e := r.ev.final[addr]
		if e != nil && e.Status == engine.StatusFailed && e.Class != engine.ClassRecord {
			stops = append(stops, fmt.Sprintf("%s: %s (%s): %s", addr, e.Status, e.Class, firstLine(e.Message)))
		}
	}
	if len(stops) > 0 {
		s.p("Step failures beyond request-level records (stop-class unless the plan overrode the policy):")
		s.list(stops)
	}
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func (r *Report) coverageSection(d *document) {
	s := d.add("coverage", "Coverage ledger")
	cov := r.Summary.Coverage
	var counts []string
	for _, k := range slices.Sorted(maps.Keys(cov.ByStatus)) {
		counts = append(counts, fmt.Sprintf("%d %s", cov.ByStatus[k], k))
	}
	s.p("%d planned steps: %s.", cov.Steps, strings.Join(counts, ", "))
	t := &table{head: []string{"Step", "Phase", "Status", "Class", "Attempts", "Reason"}}
	for _, in := range r.ev.plan.Instances {
		e := r.ev.final[in.Addr]
		status, class, msg := Pending, "", ""
		if e != nil {
			status, class, msg = string(e.Status), string(e.Class), firstLine(e.Message)
			if e.BlockedBy != "" && !strings.Contains(msg, e.BlockedBy) {
				msg = strings.TrimSpace("blocked by " + e.BlockedBy + ". " + msg)
			}
		}
		phase := in.Meta.Phase
		if phase == "" {
			phase = "—"
		}
		t.rows = append(t.rows, []string{in.Addr, phase, status, orDash(class), fmt.Sprint(r.ev.starts[in.Addr]), orDash(excerpt(msg, 200))})
	}
	s.tab(t)
}

func (r *Report) amendmentsSection(d *document) {
	s := d.add("amendments", "Amendments")
	if len(r.ev.amendments) == 0 {
		s.p("None: the plan ran as frozen (plan sha256 %s).", r.Summary.PlanSHA256)
		return
	}
	t := &table{head: []string{"#", "Time (UTC)", "Class", "Reason", "Diff summary", "Affected"}}
	var posthoc []string
	for _, a := range r.ev.amendments {
		if a.review != nil && a.review.PostHoc() {
			var what []string
			for _, c := range a.review.Review.Of(engine.ClassPostHoc) {
				what = append(what, c.Line())
			}
			if len(what) == 0 {
				what = append(what, "it was recorded with --post-hoc")
			}
			posthoc = append(posthoc, fmt.Sprintf("Amendment %d is %s: %s.", a.Number, PostHocLabel, strings.Join(what, "; ")))
		}
		var aff []string
		for _, c := range a.Diff.Campaign {
			aff = append(aff, fmt.Sprintf("campaign.%s: %s → %s", c.Path, orAbsent(c.Old), orAbsent(c.New)))
		}
		for _, c := range a.Diff.Changes {
			aff = append(aff, c.Kind+" "+c.Addr)
		}
		t.rows = append(t.rows, []string{fmt.Sprint(a.Number), a.Time, a.class(), a.Reason, a.Summary, orDash(strings.Join(aff, "; "))})
	}
	s.tab(t)
	if len(posthoc) == 0 {
		s.p("Every amendment is prospective: none changes a step that had started, and none changes what shapes the analysis (the decision rule, the outage, the frozen inputs, a matrix's blocks) after a measured block it affects had started; the journal shows this for each. The effective plan hash is %s.", r.Summary.EffectivePlan)
		return
	}
	s.list(posthoc)
	s.p("A post-hoc amendment was made after the data it shapes existed: every verdict it touches is labelled %q and cannot promote. The class of each amendment is redone from the journal, whatever its record says. The effective plan hash is %s.", PostHocLabel, r.Summary.EffectivePlan)
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// gpuBlocksID is the section of the per-block GPU table; GitHub's anchor for its
// title is the same, so the link works in report.md as in report.html.
const gpuBlocksID = "gpu-observations-per-block"

// gpuSection summarises the telemetry per device; the row of every block window
// and device is in the appendix it links to.
func (r *Report) gpuSection(d *document) {
	s := d.add("gpu", "GPU observations")
	if len(r.ev.gpuSamples) == 0 {
		s.p("No GPU telemetry was recorded in this state directory. Nothing is said about power, temperature or clocks.")
		return
	}
	windows := map[string]int{}
	power := map[string][]float64{}
	for _, b := range r.ev.blocks {
		seen := map[string]bool{}
		for _, g := range b.gpu {
			if !seen[g.Device] {
				seen[g.Device] = true
				windows[g.Device]++
			}
		}
	}
	for _, g := range r.ev.gpuSamples {
		if g.Power != nil {
			power[g.Device] = append(power[g.Device], *g.Power)
		}
	}
	s.p("Per device, over every block window's samples (gpu.jsonl). Returned power samples can momentarily exceed the configured limit; repeated samples are not independent; these observations do not explain a performance difference or measure energy. Every block window and device: [the full table](#%s).", gpuBlocksID)
	t := &table{head: []string{"GPU", "Name", "Block windows", "Samples", "Power W min / median / max", "Temperature °C", "SM clock MHz", "Power limit W"}}
	for _, g := range devices(r.ev.gpuSamples) {
		pw := "—"
		if xs := power[g.Device]; len(xs) > 0 {
			slices.Sort(xs)
			pw = fmt.Sprintf("%s / %s / %s", fmtF(xs[0], 0), fmtF(loadgen.Percentile(xs, 0.5), 0), fmtF(xs[len(xs)-1], 0))
		}
		t.rows = append(t.rows, []string{g.Device, orDash(g.Name), fmt.Sprint(windows[g.Device]), fmt.Sprint(g.Samples), pw, gpuRange(g.TemperatureC), gpuRange(g.SMClockMHz), orDash(joinF(g.PowerLimitW, "/"))})
	}
	s.tab(t)
}

func gpuRange(x *Range) string {
	if x == nil {
		return "—"
	}
	return fmtF(x.Min, 0) + "–" + fmtF(x.Max, 0)
}

// gpuBlocksSection is the appendix the GPU summary links to: every block window
// and device.
func (r *Report) gpuBlocksSection(d *document) {
	if len(r.ev.gpuSamples) == 0 {
		return
	}
	s := d.add(gpuBlocksID, "GPU observations per block")
	s.p("Per block window, from the samples in each block's gpu.jsonl (power to 0.1 W).")
	t := &table{head: []string{"Block", "Window (UTC)", "GPU", "Samples", "Power W", "Temperature °C", "SM clock MHz", "Power limit W"}}
	rg := func(x *Range) string {
		if x == nil {
			return "—"
		}
		return fmtF(x.Min, -1) + "–" + fmtF(x.Max, -1)
	}
	pw := func(x *Range) string {
		if x == nil {
			return "—"
		}
		return fmtF(x.Min, 1) + "–" + fmtF(x.Max, 1)
	}
	for _, b := range r.ev.blocks {
		if len(b.gpu) == 0 {
			continue
		}
		lo, hi := b.gpu[0].T, b.gpu[0].T
		for _, g := range b.gpu {
			if g.T.Before(lo) {
				lo = g.T
			}
			if g.T.After(hi) {
				hi = g.T
			}
		}
		win := lo.Format("15:04:05") + "–" + hi.Format("15:04:05")
		for _, g := range devices(b.gpu) {
			t.rows = append(t.rows, []string{b.Addr, win, g.Device, fmt.Sprint(g.Samples), pw(g.PowerW), rg(g.TemperatureC), rg(g.SMClockMHz), orDash(joinF(g.PowerLimitW, "/"))})
		}
	}
	s.tab(t)
}

func (r *Report) closureSection(d *document) {
	s := d.add("closure", "Closure")
	ev := r.ev
	for _, in := range ev.plan.Instances {
		if in.Type != "restore" {
			continue
		}
		e := ev.final[in.Addr]
		if e == nil {
			s.p("%s did not run.", in.Addr)
			continue
		}
		var rc struct {
			Action    string `json:"action"`
			Outcome   string `json:"outcome"`
			Container struct {
				ID      string `json:"ID"`
				ImageID string `json:"ImageID"`
			} `json:"container"`
			Checks []struct {
				Name   string `json:"name"`
				OK     bool   `json:"ok"`
				Detail string `json:"detail"`
			} `json:"checks"`
		}
		path := e.Dir + "/receipt.json"
		if err := ev.readJSON(path, &rc); err != nil {
			s.p("%s: %s (%s); no receipt could be read: %v.", in.Addr, e.Status, orDash(string(e.Class)), err)
			continue
		}
		passed := 0
		var failed []string
		for _, c := range rc.Checks {
			if c.OK {
				passed++
			} else {
				failed = append(failed, c.Name+": "+c.Detail)
			}
		}
		s.p("%s: %s; receipt %s says action %s, outcome %s, %d/%d checks passed; container %s, image %s.",
			in.Addr, e.Status, path, orDash(rc.Action), orDash(rc.Outcome), passed, len(rc.Checks), short(rc.Container.ID), orDash(rc.Container.ImageID))
		s.list(failed)
	}
	switch ws := r.Summary.OutageWindows; len(ws) {
	case 0:
		s.p("No outage was opened.")
	case 1:
		s.p("%s", outageLines(ws)[0])
	default:
		s.p("%d outage windows: a held campaign that is continued opens a new window with its own budget.", len(ws))
		s.list(outageLines(ws))
	}
	if ev.ended != nil {
		if msg := strings.TrimSpace(firstLine(ev.ended.Message)); msg != "" {
			s.p("Campaign end record: %s: %s.", ev.ended.Status, msg)
		} else {
			s.p("Campaign end record: %s.", ev.ended.Status)
		}
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return orDash(id)
}

func (r *Report) identitiesSection(d *document) {
	s := d.add("identities", "Identities")
	ev := r.ev
	items := []string{
		"Frozen plan sha256: " + r.Summary.PlanSHA256,
		"Effective plan sha256: " + r.Summary.EffectivePlan + fmt.Sprintf(" (%d amendment(s))", r.Summary.Amendments),
	}
	if r.Summary.ManifestSHA256 != "" {
		items = append(items, fmt.Sprintf("manifest.json sha256: %s (%d artefacts)", r.Summary.ManifestSHA256, ev.manifestN))
	}
	for _, rec := range ev.records {
		if rec.Kind == engine.KindPlanFrozen {
			for _, k := range slices.Sorted(maps.Keys(rec.Frozen)) {
				items = append(items, fmt.Sprintf("Frozen input %s sha256: %s", k, rec.Frozen[k]))
			}
			break
		}
	}
	// The rigor builds that froze the plan and ran its applies, each once, in order.
	var builds []string
	for _, rec := range ev.records {
		if (rec.Kind == engine.KindPlanFrozen || rec.Kind == engine.KindApplyStart) && rec.Rigor != "" && !slices.Contains(builds, rec.Rigor) {
			builds = append(builds, rec.Rigor)
		}
	}
	if len(builds) > 0 {
		items = append(items, "rigor build: "+strings.Join(builds, "; "))
	}
	names, images, _ := r.targetImages()
	for _, n := range names {
		for _, img := range images[n] {
			items = append(items, fmt.Sprintf("Target %s image: %s", n, img))
		}
	}
	s.list(items)
	if pr := r.Summary.PromptReconstruction; pr != nil {
		s.p("Corpus per cell: same work for every arm. %s", pr.Scope)
		t := &table{head: []string{"Matrix", "C", "Arms", "Corpus sha256", "Same across arms"}}
		for _, cc := range pr.Cells {
			var arms, digests []string
			shared := cc.Identical != nil && *cc.Identical
			for _, a := range cc.Arms {
				arms = append(arms, a.Arm)
				d := strings.Join(a.SHA256, ", ")
				switch {
				case len(a.SHA256) == 0 && a.Missing > 0:
					d = fmt.Sprintf("none recorded (%d attempt(s))", a.Missing)
				case len(a.SHA256) == 0:
					d = "—"
				case a.Missing > 0:
					d += fmt.Sprintf(" (%d attempt(s) without a digest)", a.Missing)
				}
				if !shared {
					d = a.Arm + ": " + d
				}
				if !slices.Contains(digests, d) {
					digests = append(digests, d)
				}
			}
			verdict := cc.Statement
			switch {
			case cc.Identical == nil:
			case *cc.Identical:
				verdict = "yes"
			default:
				verdict = "no: " + strings.TrimPrefix(cc.Statement, "the arms did not send the identical corpus ")
			}
			t.rows = append(t.rows, []string{cc.Matrix, fmt.Sprint(cc.Concurrency), strings.Join(arms, ", "), strings.Join(digests, "; "), verdict})
		}
		s.tab(t)
	}
	if len(r.Summary.Integrity) == 0 {
		s.p("Every requests.jsonl read for this report hashed to the sha256 the journal recorded, and the journal's hash chain verified. `rigor verify` re-hashes every artefact.")
	} else {
		s.p("Integrity problems met while reading the evidence:")
		s.list(r.Summary.Integrity)
	}
}

func engineMaxText(c *RowConc) string {
	if c == nil || c.EngineRunningMax == nil || c.EngineWaitingMax == nil {
		return "not sampled"
	}
	return fmt.Sprintf("%d / %d", *c.EngineRunningMax, *c.EngineWaitingMax)
}

// hitRate is a prefix-cache hit rate to a tenth of a percent; a cache that missed
// even once never reads 100.0% (">99.9%"), one that hit even once never 0.0%.
func hitRate(r float64) string {
	s := fmtF(r*100, 1)
	switch {
	case r < 1 && s == "100.0":
		return ">99.9%"
	case r > 0 && s == "0.0":
		return "<0.1%"
	}
	return s + "%"
}

// protectedText states a rule's protected cells and the regression they may take,
// or that it protects none.
func protectedText(cells []string, maxRegression float64) string {
	if len(cells) == 0 {
		return "no protected cells"
	}
	return fmt.Sprintf("protected cells %s may regress by at most %s", strings.Join(cells, ", "), pct(maxRegression))
}
