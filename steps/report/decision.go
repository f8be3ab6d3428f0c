package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// Level is the two-sided confidence of every interval in the verdict.
const Level = 0.95

// DiagnosticVerdict is the verdict of a rule with promotion = false.
const DiagnosticVerdict = "not promoted: diagnostic only, no promotion is authorised (promotion = false)"

// Verdict is the decision rule applied to the evidence. Promoted is true only when
// every comparison is eligible and every criterion holds.
type Verdict struct {
	Promoted bool `json:"promoted"`
	// PostHoc says a post-hoc amendment touches the verdict (its rule, a setting
	// every measured block is held to, or the blocks of a compared matrix): the
	// verdict is labelled "post-hoc, not pre-registered" and Promoted is false.
	PostHoc           bool  `json:"post_hoc"`
	PostHocAmendments []int `json:"post_hoc_amendments,omitempty"`
	// DiagnosticOnly says the rule declares promotion = false: the comparisons are
	// made and stated, and Promoted is false whatever they show.
	DiagnosticOnly bool          `json:"diagnostic_only"`
	Rule           *decisionRule `json:"rule"`
	Eligible       bool          `json:"eligible"`
	Verdict        string        `json:"verdict"`
	Reasons        []string      `json:"reasons"`
	Criterion      string        `json:"criterion,omitempty"`
	Level          float64       `json:"level,omitempty"`
	// MaxDrift is the drift bound in force and MaxDriftBasis where it comes from.
	MaxDrift      float64      `json:"max_drift,omitempty"`
	MaxDriftBasis string       `json:"max_drift_basis,omitempty"`
	DriftArm      string       `json:"drift_control_arm,omitempty"` // "" when no incumbent arm follows the candidate
	Comparisons   []Comparison `json:"comparisons"`
}

// Comparison is one cell selector of the rule: the candidate against the incumbent
// arms that bracket it, repetition by repetition.
type Comparison struct {
	Role           string      `json:"role"` // primary or protected
	Cell           string      `json:"cell"`
	Metric         string      `json:"metric"`
	HigherIsBetter bool        `json:"higher_is_better"`
	Baseline       *CellFigure `json:"baseline"`
	Candidate      *CellFigure `json:"candidate"`
	After          *CellFigure `json:"drift_control,omitempty"`
	Eligible       bool        `json:"eligible"`
	Ineligible     string      `json:"ineligible_reason,omitempty"`
	Pairs          []Pair      `json:"pairs"`
	// Gain is the mean paired gain, signed so that positive is better whatever the
	// metric's direction; Interval is its 95% interval (method t or bootstrap).
	Gain     *float64        `json:"gain"`
	Interval *stats.Interval `json:"interval,omitempty"`
	Drift    *Drift          `json:"drift,omitempty"`
	// Criterion states the test; Decided names the figure that decided it and
	// DecidingValue its value. HoldsPoint and HoldsInterval say what each criterion
	// would have said, so a reader sees why they differ.
	Criterion     string   `json:"criterion"`
	Decided       string   `json:"decided_by,omitempty"`
	DecidingValue *float64 `json:"deciding_value,omitempty"`
	Holds         bool     `json:"holds"`
	HoldsPoint    *bool    `json:"holds_point,omitempty"`
	HoldsInterval *bool    `json:"holds_interval,omitempty"`
}

// Pair is one repetition of a comparison: the incumbent before and after, their
// mean (the bracketing baseline), the candidate and the gain.
type Pair struct {
	Repetition int      `json:"repetition"`
	Before     float64  `json:"before"`
	After      *float64 `json:"after,omitempty"`
	Baseline   float64  `json:"baseline"`
	Candidate  float64  `json:"candidate"`
	Gain       float64  `json:"gain"`
}

// CellFigure is the metric of one arm's cell over the matched repetitions.
type CellFigure struct {
	CellID         string    `json:"cell_id"`
	Disposition    string    `json:"disposition"`
	FailedRequests int       `json:"failed_requests"`
	Repetitions    []int     `json:"repetitions"`
	Values         []float64 `json:"values"`
	Mean           *float64  `json:"mean"`
	// Excluded lists the measured blocks a capture observed: never in a verdict.
	Excluded []string `json:"excluded_observed,omitempty"`
}

// excludedText says which observed blocks the figure left out, for a reason that
// counts repetitions.
func (f *CellFigure) excludedText() string {
	if f == nil || len(f.Excluded) == 0 {
		return ""
	}
	return " (observed blocks never enter a verdict: " + strings.Join(f.Excluded, "; ") + ")"
}

// Drift is the relative change of a metric between the incumbent arms before and
// after the candidate at one concurrency: after/before - 1 per repetition, with its
// 95% interval.
type Drift struct {
	Concurrency int             `json:"concurrency"`
	Metric      string          `json:"metric"`
	Before      string          `json:"before_cell"`
	After       string          `json:"after_cell"`
	Repetitions []int           `json:"repetitions"`
	Changes     []float64       `json:"changes"`
	Mean        *float64        `json:"mean"`
	Interval    *stats.Interval `json:"interval,omitempty"`
	Max         float64         `json:"max_drift"`
	Exceeds     bool            `json:"exceeds"`
	Note        string          `json:"note,omitempty"`
}

// blockMetric is a decision metric of one block attempt. why says why there is no
// usable figure (a percentile below its certified count, energy without coverage).
func blockMetric(a *attemptRef, metric string) (float64, string) {
	st := a.stats
	if st == nil {
		return 0, "no records"
	}
	// A block's median enters a rule only over as many samples as certify it (11
	// for p50), like any percentile.
	pick := func(p *float64, m int) (float64, string) {
		if p == nil {
			return 0, "no visible success"
		}
		if n, need := len(st.vals[m]), stats.CertifiedMin(0.5, stats.CertifyConfidence); n < need {
			return 0, fmt.Sprintf("p50 over %d samples is descriptive: %d certify it", n, need)
		}
		return *p, ""
	}
	switch metric {
	case "aggregate_output_tok_s":
		if st.WallS() <= 0 {
			return 0, "no wall time"
		}
		return st.AggregateTokS(), ""
	case "decode_tok_s_p50":
		return pick(st.Decodep50, mDecode)
	case "ttft_ms_p50":
		return pick(st.TTFTp50, mTTFT)
	case "tpot_ms_p50":
		return pick(st.TPOTp50, mTPOT)
	case "e2e_ms_p50":
		return pick(st.E2Ep50, mE2E)
	case "joules_per_output_token":
		e := a.energy
		switch {
		case e == nil:
			return 0, "no GPU energy over the block window"
		case !e.usable():
			return 0, fmt.Sprintf("GPU samples cover %s of the block window, below the %s an energy verdict needs", pct(e.Coverage), pct(minEnergyCoverage))
		}
		return *e.JoulesPerOutputToken, ""
	}
	if m, p, ok := percentileMetric(metric); ok {
		xs := append([]float64(nil), st.vals[m]...)
		slices.Sort(xs)
		b := stats.QuantileInterval(xs, p, Level)
		if !b.Certified {
			return 0, fmt.Sprintf("p%s over %d samples is descriptive: %d certify it", fmtF(p*100, -1), b.N, b.Needed)
		}
		return *b.Estimate, ""
	}
	return 0, "unknown metric"
}

// percentileMetric parses "ttft_p95_ms" into the per-request figure and 0.95.
func percentileMetric(name string) (int, float64, bool) {
	fig, rest, ok := strings.Cut(name, "_p")
	if !ok || !strings.HasSuffix(rest, "_ms") {
		return 0, 0, false
	}
	n, err := strconv.Atoi(strings.TrimSuffix(rest, "_ms"))
	if err != nil || n <= 0 || n >= 100 {
		return 0, 0, false
	}
	m := map[string]int{"ttft": mTTFT, "tpot": mTPOT, "e2e": mE2E}
	i, ok := m[fig]
	return i, float64(n) / 100, ok
}

// armTarget is the target name of a matrix arm's cells.
func (ev *evidence) armTarget(matrix, arm string) string {
	for _, c := range ev.cells {
		if c.Matrix == matrix && c.Arm == arm && len(c.Blocks) > 0 {
			return text(c.Blocks[0].Target["name"])
		}
	}
	return ""
}

// driftArm is the drift-control arm of a rule (plans.DriftControlArm).
func (ev *evidence) driftArm(matrix, baseline, candidate string) string {
	var arms []plans.ArmTarget
	for _, c := range ev.cells {
		if len(c.Blocks) > 0 {
			arms = append(arms, plans.ArmTarget{Matrix: c.Matrix, Arm: c.Arm, Target: text(c.Blocks[0].Target["name"])})
		}
	}
	return plans.DriftControlArm(arms, matrix, baseline, candidate)
}

// decide applies the campaign's decision rule to the evidence, and labels the
// verdict post-hoc when an amendment made after measured data exist touches it.
func (ev *evidence) decide(rows map[string]*Row) Verdict {
	v := ev.applyRule(rows)
	if v.Rule != nil {
		ev.labelPostHoc(&v)
	}
	return v
}

// applyRule applies the effective decision rule to the evidence.
func (ev *evidence) applyRule(rows map[string]*Row) Verdict {
	rule := ev.plan.Campaign.Decision
	v := Verdict{Rule: rule, Reasons: []string{}, Comparisons: []Comparison{}}
	if rule == nil {
		v.Verdict = "no decision rule was pre-registered: nothing is promoted and no ranking is made"
		v.Reasons = append(v.Reasons, "the campaign has no decision block")
		return v
	}
	higher, known := plans.DecisionMetrics[rule.PrimaryMetric]
	if !known {
		v.Verdict = "ineligible: unknown primary metric " + strconv.Quote(rule.PrimaryMetric)
		v.Reasons = append(v.Reasons, v.Verdict)
		return v
	}
	v.Criterion, v.Level = rule.Criterion, Level
	v.MaxDrift, v.MaxDriftBasis = ev.maxDrift(rule)
	v.DriftArm = ev.driftArm(rule.Matrix, rule.BaselineArm, rule.CandidateArm)
	k := max(rule.MatchedRepetitions, 1)
	for _, sel := range rule.PrimaryCells {
		v.Comparisons = append(v.Comparisons, ev.compare(rule, "primary", sel, rule.MinGain, higher, k, v, rows))
	}
	for _, sel := range rule.ProtectedCells {
		v.Comparisons = append(v.Comparisons, ev.compare(rule, "protected", sel, rule.MaxProtectedRegression, higher, k, v, rows))
	}
	v.Eligible = len(v.Comparisons) > 0
	holds := v.Eligible
	for _, c := range v.Comparisons {
		switch {
		case !c.Eligible:
			v.Eligible, holds = false, false
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s cell %s is ineligible: %s", c.Role, c.Cell, c.Ineligible))
		case !c.Holds:
			holds = false
			v.Reasons = append(v.Reasons, c.why(rule))
		case c.HoldsPoint != nil && c.HoldsInterval != nil && *c.HoldsPoint != *c.HoldsInterval:
			v.Reasons = append(v.Reasons, c.why(rule))
		}
	}
	if v.DriftArm == "" {
		v.Reasons = append(v.Reasons, fmt.Sprintf("no incumbent arm runs %s's target after %s: drift between the arms is not measured", rule.BaselineArm, rule.CandidateArm))
	}
	v.Promoted = v.Eligible && holds
	if !rule.promotes() {
		// Seed 001: a diagnostic campaign authorises no promotion. What the rule
		// would have said is kept as a reason, never as a verdict.
		v.DiagnosticOnly, v.Promoted = true, false
		would := "a pre-registered criterion does not hold"
		switch {
		case !v.Eligible:
			would = "the comparison is ineligible"
		case holds:
			would = "every pre-registered criterion holds"
		}
		v.Verdict = DiagnosticVerdict
		v.Reasons = append([]string{"the decision rule declares promotion = false: the campaign is diagnostic only; as a diagnostic, " + would}, v.Reasons...)
		return v
	}
	switch {
	case !v.Eligible:
		v.Verdict = "not promoted: the comparison is ineligible"
	case v.Promoted:
		v.Verdict = "promoted: every pre-registered criterion holds"
		v.Reasons = append(v.Reasons, "every primary gain and protected regression is within the rule")
	default:
		v.Verdict = "not promoted: a pre-registered criterion does not hold"
	}
	return v
}

// maxDrift is the rule's drift bound and where it comes from.
func (ev *evidence) maxDrift(rule *decisionRule) (float64, string) {
	if rule.MaxDrift != nil {
		return *rule.MaxDrift, "declared max_drift"
	}
	d := plans.Decision{MinGain: rule.MinGain, MaxProtectedRegression: rule.MaxProtectedRegression, ProtectedCells: rule.ProtectedCells}
	return d.DefaultMaxDrift(), "default: half the smallest effect the rule must resolve"
}

// why explains a comparison that does not hold, or whose two criteria disagree.
func (c Comparison) why(rule *decisionRule) string {
	g, lo := *c.Gain, math.NaN()
	if c.Interval != nil {
		lo = c.Interval.Lo
	}
	var s string
	if c.Role == "primary" {
		s = fmt.Sprintf("primary cell %s: mean gain %s", c.Cell, pm(g))
		if !math.IsNaN(lo) {
			s += fmt.Sprintf(", 95%% interval lower bound %s", pm(lo))
		}
		s += fmt.Sprintf(", minimum %s", pct(rule.MinGain))
	} else {
		s = fmt.Sprintf("protected cell %s: mean regression %s", c.Cell, pm(-g))
		if !math.IsNaN(lo) {
			s += fmt.Sprintf(", 95%% interval upper bound of the regression %s", pm(-lo))
		}
		s += fmt.Sprintf(", maximum %s", pct(rule.MaxProtectedRegression))
	}
	switch {
	case c.HoldsPoint != nil && c.HoldsInterval != nil && *c.HoldsPoint && !*c.HoldsInterval:
		s += fmt.Sprintf(": the point estimate meets the rule but the interval does not, so criterion \"point\" would hold and criterion \"interval\" does not; with %d repetitions the block-to-block noise is too large to resolve it", len(c.Pairs))
	case c.HoldsPoint != nil && c.HoldsInterval != nil && !*c.HoldsPoint && *c.HoldsInterval:
		s += ": the interval meets the rule but the point estimate does not"
	case !c.Holds:
		s += fmt.Sprintf(": does not hold under criterion %q", rule.Criterion)
	}
	return s
}

// compare builds one comparison at the concurrency a cell selector names.
func (ev *evidence) compare(rule *decisionRule, role, sel string, threshold float64, higher bool, k int, v Verdict, rows map[string]*Row) Comparison {
	c := Comparison{Role: role, Cell: sel, Metric: rule.PrimaryMetric, HigherIsBetter: higher, Pairs: []Pair{}}
	bound := "mean of"
	if rule.Criterion == plans.CriterionInterval {
		bound = "lower bound of the 95% interval of"
	}
	if role == "primary" {
		c.Criterion = fmt.Sprintf("%s the gain ≥ %s", bound, pct(threshold))
	} else {
		c.Criterion = fmt.Sprintf("%s the gain ≥ −%s (regression ≤ %s)", bound, pct(threshold), pct(threshold))
	}
	conc, err := strconv.Atoi(strings.TrimPrefix(sel, "c"))
	if err != nil {
		c.Ineligible = fmt.Sprintf("%q is not a cell selector", sel)
		return c
	}
	var why []string
	c.Baseline, why = ev.figure(rule.Matrix, rule.BaselineArm, conc, k, rule.PrimaryMetric, rows, why)
	c.Candidate, why = ev.figure(rule.Matrix, rule.CandidateArm, conc, k, rule.PrimaryMetric, rows, why)
	if v.DriftArm != "" {
		var dwhy []string
		c.After, dwhy = ev.figure(rule.Matrix, v.DriftArm, conc, k, rule.PrimaryMetric, rows, nil)
		for _, w := range dwhy {
			why = append(why, "drift control "+w)
		}
		c.Drift = ev.drift(rule.Matrix, rule.BaselineArm, v.DriftArm, conc, k, rule.PrimaryMetric, v.MaxDrift)
	}
	// Same work for every arm: a recorded difference of corpus voids the comparison.
	if cc := ev.corpora[corpusKey(rule.Matrix, conc)]; cc != nil {
		arms := []string{rule.BaselineArm, rule.CandidateArm}
		if v.DriftArm != "" {
			arms = append(arms, v.DriftArm)
		}
		if same, known, differ := cc.same(arms...); known && !same {
			why = append(why, "the compared arms did not send the identical corpus ("+differ+")")
		}
	}
	if len(why) > 0 {
		c.Ineligible = strings.Join(why, "; ")
		return c
	}
	// Drift makes the comparison ineligible but, unlike a failure or an invalid
	// block, leaves figures worth showing: the effect is estimated and stated.
	var drifted string
	if c.Drift != nil && c.Drift.Exceeds {
		drifted = fmt.Sprintf("drift of %s between %s and %s exceeds what the rule can resolve (max_drift %s, %s)",
			pm(*c.Drift.Mean), rule.BaselineArm, v.DriftArm, pct(v.MaxDrift), v.MaxDriftBasis)
	}
	// Pair by repetition number; the drift control pairs too when present.
	for i, rep := range c.Baseline.Repetitions {
		j := slices.Index(c.Candidate.Repetitions, rep)
		if j < 0 {
			continue
		}
		p := Pair{Repetition: rep, Before: c.Baseline.Values[i], Baseline: c.Baseline.Values[i], Candidate: c.Candidate.Values[j]}
		if c.After != nil {
			a := slices.Index(c.After.Repetitions, rep)
			if a < 0 {
				continue
			}
			x := c.After.Values[a]
			p.After = &x
			p.Baseline = (p.Before + x) / 2
		}
		if p.Baseline == 0 {
			c.Ineligible = fmt.Sprintf("repetition %d: the incumbent's %s is zero", rep, rule.PrimaryMetric)
			return c
		}
		p.Gain = p.Candidate/p.Baseline - 1
		if !higher {
			p.Gain = 1 - p.Candidate/p.Baseline
		}
		c.Pairs = append(c.Pairs, p)
	}
	if len(c.Pairs) < k {
		c.Ineligible = fmt.Sprintf("%d of the %d matched repetitions are present in every arm%s%s%s", len(c.Pairs), k, c.Baseline.excludedText(), c.Candidate.excludedText(), c.After.excludedText())
		return c
	}
	gains := make([]float64, len(c.Pairs))
	for i, p := range c.Pairs {
		gains[i] = p.Gain
	}
	g := stats.Mean(gains)
	c.Gain = &g
	if iv, err := stats.MeanInterval(gains, Level); err == nil {
		c.Interval = &iv
	}
	holdsAt := func(x float64) bool { return criterionHolds(role, threshold, x) }
	hp := holdsAt(g)
	c.HoldsPoint = &hp
	if c.Interval != nil {
		hi := holdsAt(c.Interval.Lo)
		c.HoldsInterval = &hi
	}
	if drifted != "" {
		c.Ineligible = drifted
		return c
	}
	c.Eligible = true
	switch rule.Criterion {
	case plans.CriterionInterval:
		if c.Interval == nil {
			c.Eligible = false
			c.Ineligible = fmt.Sprintf("criterion \"interval\" needs an interval, and %d matched repetition(s) give none (at least 2)", len(c.Pairs))
			return c
		}
		// Protected cells too: the value shown is the gain's lower bound, and the rule
		// reads it as "the regression is at most its negative".
		c.Decided, c.DecidingValue, c.Holds = "interval lower bound of the gain", &c.Interval.Lo, *c.HoldsInterval
	default:
		c.Decided, c.DecidingValue, c.Holds = "mean gain", c.Gain, hp
	}
	return c
}

// figure finds an arm's cell at a concurrency and takes the metric of its first k
// measured repetitions. Any failure in the cell makes it ineligible, and so does a
// block that fails a validity check or whose metric is not usable.
func (ev *evidence) figure(matrix, arm string, conc, k int, metric string, rows map[string]*Row, why []string) (*CellFigure, []string) {
	cell := ev.cellAt(matrix, arm, conc)
	if cell == nil {
		return nil, append(why, fmt.Sprintf("arm %s of matrix %s has no cell at concurrency %d", arm, matrix, conc))
	}
	row := rows[cell.Key]
	f := &CellFigure{CellID: cell.Key, Disposition: row.Disposition, Repetitions: []int{}, Values: []float64{}}
	for _, b := range cell.Blocks {
		for _, a := range b.population() {
			f.FailedRequests += a.stats.FailedN
		}
	}
	if f.FailedRequests > 0 {
		why = append(why, fmt.Sprintf("%s has %d failed request(s)", cell.Key, f.FailedRequests))
	}
	if row.Disposition != Accepted {
		why = append(why, fmt.Sprintf("%s is %s", cell.Key, row.Disposition))
	}
	if f.FailedRequests > 0 || row.Disposition != Accepted {
		// Seed 003: a cell that is not accepted carries no headline figure.
		return f, why
	}
	sum := 0.0
	for _, b := range cell.Blocks {
		a := b.settling()
		if !b.measured() || a == nil || a.stats == nil {
			continue
		}
		// Every measured block of a compared cell must pass its validity checks,
		// the repetitions beyond the k the rule compares too: a block that failed
		// one says the stack or the client misbehaved in that cell.
		if b.clean() && a.validity != nil && !a.validity.OK {
			why = append(why, fmt.Sprintf("%s fails validity: %s", blockName(b), strings.Join(a.validity.failed(), "; ")))
			continue
		}
		if len(f.Values) == k {
			continue
		}
		if !b.clean() {
			f.Excluded = append(f.Excluded, observedLabel(b))
			continue
		}
		x, bad := blockMetric(a, metric)
		if bad != "" {
			why = append(why, fmt.Sprintf("%s: %s", blockName(b), bad))
			continue
		}
		f.Repetitions = append(f.Repetitions, b.Repetition)
		f.Values = append(f.Values, x)
		sum += x
	}
	if len(f.Values) < k {
		why = append(why, fmt.Sprintf("%s has %d of the %d matched repetitions required%s", cell.Key, len(f.Values), k, f.excludedText()))
	} else {
		m := sum / float64(len(f.Values))
		f.Mean = &m
	}
	return f, why
}

// cellAt is an arm's cell at a concurrency (the first matrix that has one).
func (ev *evidence) cellAt(matrix, arm string, conc int) *cellRef {
	for _, c := range ev.cells {
		if c.Matrix == matrix && c.Arm == arm && c.Conc == conc {
			return c
		}
	}
	return nil
}

// blockName is "arm/cN/rK" for a matrix block.
func blockName(b *blockRef) string {
	return fmt.Sprintf("%s/c%d/%s", b.Arm, b.Conc, blockLabel(b))
}

// drift measures the incumbent's change between its arm before and after the
// candidate at one concurrency, on one metric, over the first k repetitions both
// arms measured with a usable figure. Cells with failures still get a figure (the
// comparison is already ineligible for them); nil when there are no pairs.
func (ev *evidence) drift(matrix, before, after string, conc, k int, metric string, maxDrift float64) *Drift {
	cb, ca := ev.cellAt(matrix, before, conc), ev.cellAt(matrix, after, conc)
	if cb == nil || ca == nil {
		return nil
	}
	d := &Drift{Concurrency: conc, Metric: metric, Before: cb.Key, After: ca.Key, Max: maxDrift, Repetitions: []int{}, Changes: []float64{}}
	vals := func(c *cellRef) map[int]float64 {
		m := map[int]float64{}
		for _, b := range c.Blocks {
			a := b.settling()
			if !b.clean() || a == nil || a.stats == nil {
				continue
			}
			if x, bad := blockMetric(a, metric); bad == "" {
				m[b.Repetition] = x
			}
		}
		return m
	}
	for _, c := range []*cellRef{cb, ca} {
		for _, b := range c.Blocks {
			for _, a := range b.population() {
				if b.measured() && a.stats.FailedN > 0 {
					d.Note = fmt.Sprintf("withheld: %s has failed requests, and a failed cell carries no figure", c.Key)
					return d
				}
			}
		}
	}
	vb, va := vals(cb), vals(ca)
	for _, rep := range slices.Sorted(maps.Keys(vb)) {
		y, ok := va[rep]
		if x := vb[rep]; ok && x != 0 && len(d.Repetitions) < k {
			d.Repetitions = append(d.Repetitions, rep)
			d.Changes = append(d.Changes, y/x-1)
		}
	}
	if len(d.Changes) == 0 {
		d.Note = "no repetition has a usable figure in both incumbent arms"
		return d
	}
	m := stats.Mean(d.Changes)
	d.Mean = &m
	if iv, err := stats.MeanInterval(d.Changes, Level); err == nil {
		d.Interval = &iv
	}
	d.Exceeds = math.Abs(m) > maxDrift
	return d
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

// criterionHolds says whether a gain x meets a cell's criterion: a primary cell's
// gain must reach its threshold (min_gain); a protected cell's may fall to minus
// its threshold (a regression of at most max_protected_regression).
func criterionHolds(role string, threshold, x float64) bool {
	if role == "primary" {
		return x >= threshold
	}
	return x >= -threshold
}
