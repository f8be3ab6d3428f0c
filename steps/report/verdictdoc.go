package report

import (
	"fmt"
	"github.com/rigor-bench/rigor/steps/internal/agent"
	"math"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// The sections of the report that carry the verdict's statistics: the first-screen
// summary, noise and drift, validity checks, energy, and tail certification.

func pm(x float64) string { // signed percentage; no sign on what rounds to zero
	switch {
	case pct(math.Abs(x)) == pct(0):
		return pct(0)
	case x > 0:
		return "+" + pct(x)
	}
	return "−" + pct(-x)
}

func ivText(iv *stats.Interval) string {
	if iv == nil {
		return "no interval"
	}
	return fmt.Sprintf("[%s, %s] (%s, n = %d)", pm(iv.Lo), pm(iv.Hi), iv.Method, iv.N)
}

func driftText(d *Drift) string {
	if d == nil {
		return "not measured"
	}
	if d.Mean == nil {
		return d.Note
	}
	s := pm(*d.Mean)
	if d.Interval != nil {
		s += " " + ivText(d.Interval)
	}
	if d.Exceeds {
		s += fmt.Sprintf(": mean exceeds max %s", pct(d.Max))
	} else {
		s += fmt.Sprintf(": mean within max %s", pct(d.Max))
	}
	return s
}

// glanceSection is the first screen: the verdict with its effect and interval, the
// drift, the validity checks and the energy per token of every compared cell.
func (r *Report) glanceSection(d *document) {
	v := r.Summary.Promotion
	s := d.add("glance", "Verdict at a glance")
	if v.Rule == nil {
		s.p("No decision rule was pre-registered: nothing is promoted. %s", r.validityLine())
		return
	}
	ru := v.Rule
	crit := "interval: the lower bound of the 95% interval of the gain must reach min_gain on primary cells, and its bound on the regression stay within max_protected_regression on protected cells"
	if ru.Criterion == plans.CriterionPoint {
		crit = "point: the mean paired gain must reach min_gain (the interval is shown but does not decide)"
	}
	s.p("%s. Criterion %s. Metric %s; the candidate (%s) is compared per repetition with %s.",
		capital(v.Verdict), crit, ru.PrimaryMetric, ru.CandidateArm, baselineText(ru.BaselineArm, v.DriftArm))
	t := &table{head: []string{"Role", "Cell", "Incumbent before / after (mean)", "Candidate (mean)", "Effect, 95% interval", "Drift after/before, 95% interval", "Validity", "Energy J/output token (incumbent before / after → candidate)", "Decided by", "Holds"}}
	for _, c := range v.Comparisons {
		inc, cand, eff, dec, holds := "—", "—", "—", "—", "ineligible"
		if c.Baseline != nil && c.Baseline.Mean != nil {
			inc = metricNum(c.Metric, *c.Baseline.Mean)
			if c.After != nil && c.After.Mean != nil {
				inc += " / " + metricNum(c.Metric, *c.After.Mean)
			}
		}
		if c.Candidate != nil && c.Candidate.Mean != nil {
			cand = metricNum(c.Metric, *c.Candidate.Mean)
		}
		if c.Gain != nil {
			eff = pm(*c.Gain) + " " + ivText(c.Interval)
		}
		if c.Eligible {
			dec = fmt.Sprintf("%s %s vs %s", c.Decided, pm(*c.DecidingValue), c.Criterion)
			holds = yesNo(c.Holds)
		}
		t.rows = append(t.rows, []string{c.Role, c.Cell, inc, cand, eff, driftText(c.Drift), r.cellValidity(ru, c), r.energyPair(ru, c), dec, holds})
	}
	s.tab(t)
	s.list(v.Reasons)
	s.p("%s %s", r.validityLine(), r.energyLine())
	if p := r.Summary.Statistics.Power; p != nil {
		s.list(trimmed(p.Lines()))
	}
}

func trimmed(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strings.TrimSpace(x)
	}
	return out
}

func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// cellValidity sums the validity of the compared arms' measured blocks at a cell.
func (r *Report) cellValidity(ru *decisionRule, c Comparison) string {
	passed, n := 0, 0
	var failed []string
	for _, f := range []*CellFigure{c.Baseline, c.Candidate, c.After} {
		if f == nil {
			continue
		}
		row := r.rows[f.CellID]
		if row == nil || row.Validity == nil {
			continue
		}
		passed += row.Validity.Passed
		n += row.Validity.Blocks
		failed = append(failed, row.Validity.Failed...)
	}
	if n == 0 {
		return "no block checked"
	}
	s := fmt.Sprintf("%d/%d blocks pass", passed, n)
	if len(failed) > 0 {
		s += ": " + excerpt(strings.Join(failed, "; "), 160)
	}
	return s
}

func (r *Report) energyPair(ru *decisionRule, c Comparison) string {
	get := func(f *CellFigure) string {
		if f == nil || r.rows[f.CellID] == nil || r.rows[f.CellID].Energy == nil {
			return "—"
		}
		return fmtF(r.rows[f.CellID].Energy.JoulesPerOutputToken, 3)
	}
	// The incumbent as the verdict compares it: before / after when an arm runs
	// after the candidate, as the throughput column beside it.
	s := get(c.Baseline)
	if c.After != nil {
		s += " / " + get(c.After)
	}
	s += " → " + get(c.Candidate)
	if r.Summary.Statistics.Energy.Simulated {
		s += " (simulated)"
	}
	return s
}

func (r *Report) validityLine() string {
	v := r.Summary.Statistics.Validity
	if v.BlocksChecked == 0 {
		return "Validity checks: no measured block to check."
	}
	return fmt.Sprintf("Validity checks (load, client vs native counts, E2E ≈ TTFO + TPOT·(n−1), TPOT floor, client timing): %d of %d measured block attempts pass.",
		v.BlocksChecked-v.BlocksFailed, v.BlocksChecked)
}

func (r *Report) energyLine() string {
	e := r.Summary.Statistics.Energy
	if e.Blocks == 0 {
		return "Energy: no block has GPU power samples over its window."
	}
	if e.Simulated {
		return fmt.Sprintf("Energy per token over %d block windows comes from simulated GPUs: simulated energy, not a measurement.", e.Blocks)
	}
	return fmt.Sprintf("Energy per token over %d block windows, from %s GPU power samples.", e.Blocks, e.Source)
}

// noiseSection states drift, the power estimate and every block's figure in run
// order, with the chart of the same.
func (r *Report) noiseSection(d *document, charts []chart) {
	s := d.add("noise-drift", "Noise and drift")
	st := r.Summary.Statistics
	v := r.Summary.Promotion
	metric := "aggregate_output_tok_s"
	if v.Rule != nil {
		metric = v.Rule.PrimaryMetric
	}
	switch {
	case v.Rule == nil:
		s.p("No decision rule: no drift bound applies. Every block's %s is listed in run order below.", metric)
	case v.DriftArm == "":
		s.p("No incumbent arm runs after the candidate on the baseline's target, so drift between the arms is not measured.")
	default:
		s.p("Drift is %s/%s − 1 of %s per repetition, with its 95%% interval. The bound is %s (%s) on the mean drift; a larger mean makes the comparison at that concurrency ineligible: it exceeds what the rule can resolve. The interval is shown, not bounded: with few repetitions it can be wide although the mean is within the bound.",
			v.DriftArm, v.Rule.BaselineArm, metric, pct(v.MaxDrift), v.MaxDriftBasis)
		t := &table{head: []string{"C", "Before cell", "After cell", "Per repetition", "Drift, 95% interval", "Mean within bound"}}
		for _, dr := range st.Drift {
			var per []string
			for i, rep := range dr.Repetitions {
				per = append(per, fmt.Sprintf("r%d %s", rep, pm(dr.Changes[i])))
			}
			within := "—"
			if dr.Mean != nil {
				within = yesNo(!dr.Exceeds)
			}
			t.rows = append(t.rows, []string{fmt.Sprint(dr.Concurrency), dr.Before, dr.After, orDash(strings.Join(per, ", ")), driftText(&dr), within})
		}
		s.tab(t)
	}
	if st.Power != nil {
		s.p("Power from the pilot (logged by `rigor plan apply` once the pilot has settled, before the next step; also printed by `rigor status` and `rigor plan show --state`):")
		s.list(trimmed(st.Power.Lines()))
	}
	t := &table{head: []string{"#", "Block", "Arm", "C", "Repetition", "Attempt", metric, "Relative to the baseline arm's mean at this C"}}
	for i, p := range r.runOrder(metric) {
		rel := "—"
		if p.rel != nil {
			rel = pm(*p.rel)
		}
		t.rows = append(t.rows, []string{fmt.Sprint(i + 1), p.addr, p.arm, fmt.Sprint(p.conc), fmt.Sprint(p.rep), fmt.Sprint(p.attempt), metricNum(metric, p.value), rel})
	}
	if len(t.rows) > 0 {
		s.p("Every measured matrix block in run order (journal order of its start), so drift is seen, not just stated:")
		s.tab(t)
	}
	for i := range charts {
		if charts[i].Name == "noise_drift" {
			s.elems = append(s.elems, elem{chart: &charts[i]})
		}
	}
}

// runPoint is one measured block attempt on the run-order axis.
type runPoint struct {
	addr, arm    string
	conc, rep    int
	attempt, seq int
	value        float64
	rel          *float64
	armIndex     int
}

// runOrder lists every measured matrix block attempt with a usable metric, in the
// order the journal started them, relative to the mean of the rule's baseline arm
// (in the rule's matrix) at the same concurrency.
func (r *Report) runOrder(metric string) []runPoint {
	ev := r.ev
	base, baseMatrix := "", ""
	if ru := ev.plan.Campaign.Decision; ru != nil {
		base, baseMatrix = ru.BaselineArm, ru.Matrix
	} else if len(ev.cells) > 0 {
		base, baseMatrix = ev.cells[0].Arm, ev.cells[0].Matrix
	}
	armIx := map[string]int{}
	for _, c := range ev.cells {
		if _, ok := armIx[c.Arm]; !ok {
			armIx[c.Arm] = len(armIx)
		}
	}
	var pts []runPoint
	sum, n := map[int]float64{}, map[int]int{}
	for _, m := range ev.measuredAttempts() {
		b, a := m.b, m.a
		x, bad := blockMetric(a, metric)
		if bad != "" {
			continue
		}
		addr := b.Addr
		if len(b.observedBy) > 0 {
			addr += " (observed by " + strings.Join(b.observedBy, ", ") + ")"
		}
		pts = append(pts, runPoint{addr: addr, arm: b.Arm, conc: b.Conc, rep: b.Repetition, attempt: a.N, seq: a.Start.Seq, value: x, armIndex: armIx[b.Arm]})
		// The baseline's mean is over clean blocks, as the verdict's.
		if b.Matrix == baseMatrix && b.Arm == base && a == b.settling() && b.clean() {
			sum[b.Conc] += x
			n[b.Conc]++
		}
	}
	for i := range pts {
		if n[pts[i].conc] > 0 {
			m := sum[pts[i].conc] / float64(n[pts[i].conc])
			if m != 0 {
				rel := pts[i].value/m - 1
				pts[i].rel = &rel
			}
		}
	}
	// Journal order: insertion sort is enough for a few hundred blocks.
	for i := 1; i < len(pts); i++ {
		for j := i; j > 0 && pts[j].seq < pts[j-1].seq; j-- {
			pts[j], pts[j-1] = pts[j-1], pts[j]
		}
	}
	return pts
}

// validitySection lists every check of every measured block attempt.
func (r *Report) validitySection(d *document) {
	s := d.add("validity", "Validity checks")
	s.p("Before any statistic, each measured block attempt is checked; a block that fails a check cannot support a verdict. load: requested against achieved concurrency (closed loop) or send rate against the schedule within %s (open loop). counts: client against native counters, tokens within %s and requests by finish reason exactly. e2e_identity: E2E = TTFO + capacity TPOT·(n − 1) within %s ms or %s per request. tpot_floor: the block's median capacity TPOT not under %s ms (times a simulated target's time_scale). client_timing: the last client calibration before the block. \"unavailable\" means the evidence to check it is absent; it is stated, not counted as a failure.",
		pct(rateTolFrac), pct(countTolFrac), fmtF(e2eTolMS, -1), pct(e2eTolFrac), fmtF(tpotFloorMS, -1))
	t := &table{head: []string{"Block", "Attempt", "load", "counts", "e2e_identity", "tpot_floor", "client_timing"}}
	var details []string
	for _, m := range r.ev.measuredAttempts() {
		row := []string{m.b.Addr, fmt.Sprint(m.a.N)}
		for _, c := range m.a.validity.Checks {
			row = append(row, c.Result)
			if c.Result == CheckFail {
				details = append(details, fmt.Sprintf("%s attempt %d, %s: %s", m.b.Addr, m.a.N, c.Name, c.Detail))
			}
		}
		t.rows = append(t.rows, row)
	}
	if len(t.rows) == 0 {
		s.p("No measured block left records.")
		return
	}
	s.tab(t)
	if len(details) == 0 {
		s.p("Every check that had its evidence passed. Example details of the first block: %s", r.firstDetails())
	} else {
		s.p("Failed checks:")
		s.list(details)
	}
}

func (r *Report) firstDetails() string {
	for _, m := range r.ev.measuredAttempts() {
		var parts []string
		for _, c := range m.a.validity.Checks {
			parts = append(parts, c.Name+": "+c.Detail)
		}
		return m.b.Addr + ": " + strings.Join(parts, "; ") + "."
	}
	return ""
}

// agentsSection states, for every block attempt that rigor agents sent, how many
// agents sent it and how well each was held to the block clock: the figures the
// fleet's limits judged, so a reader can see that merged records are one client's.
// Blocks the block step sent itself are not listed; without any agent the section
// is left out.
func (r *Report) agentsSection(d *document) {
	t := &table{head: []string{"Block", "Attempt", "Agents", "Records per agent", "Max clock bound ms", "Max schedule lag p99 ms", "Max CPU share", "Failure"}}
	var limits *agent.Limits
	for _, b := range r.ev.blocks {
		for _, a := range b.attempts {
			rep := a.agents
			if rep == nil || len(rep.Agents) == 0 {
				continue
			}
			if limits == nil {
				limits = &rep.Limits
			}
			var records []string
			bound, lag, cpu := 0.0, 0.0, 0.0
			failure := "none"
			for _, ag := range rep.Agents {
				records = append(records, fmt.Sprint(ag.Records))
				bound, cpu = max(bound, ag.ClockBoundMS), max(cpu, ag.CPUShare)
				if ag.ScheduleLagMS.P99 != nil {
					lag = max(lag, *ag.ScheduleLagMS.P99)
				}
				if ag.Failure != "" {
					failure = ag.Agent + ": " + ag.Failure
				}
			}
			t.rows = append(t.rows, []string{b.Addr, fmt.Sprint(a.N), fmt.Sprintf("%d agents", len(rep.Agents)), strings.Join(records, " / "),
				fmtF(bound, 3), fmtF(lag, 3), fmtF(cpu, 3), failure})
		}
	}
	if len(t.rows) == 0 {
		return
	}
	s := d.add("agents", "Load agents")
	s.p("These blocks were sent by `rigor agent` processes: the block step handed agent k slice k of the requests and one start time, and merged every record they sent back into one requests.jsonl, so every figure above is over the same records one client would write. The limits each block held its agents to are in its result.json (the first: clock bound at most %s ms, schedule lag p99 at most %s ms, CPU share at most %s); an agent past one, or one that disappeared, fails its block with class agent.",
		strconv.FormatFloat(limits.MaxClockBoundMS, 'f', -1, 64), strconv.FormatFloat(limits.MaxScheduleLagMS, 'f', -1, 64), strconv.FormatFloat(limits.MaxCPUShare, 'f', -1, 64))
	s.tab(t)
}

// energySection lists the energy of every measured block attempt.
func (r *Report) energySection(d *document) {
	s := d.add("energy", "Energy per token")
	t := &table{head: []string{"Block", "Attempt", "Window s", "Samples / interval s", "Coverage", "Mean W per GPU", "Peak W", "Joules", "J / output token", "J / request"}}
	sim := false
	for _, m := range r.ev.measuredAttempts() {
		b, a, e := m.b, m.a, m.a.energy
		if e == nil {
			continue
		}
		sim = sim || e.Simulated
		var mean, peak []string
		samples := 0
		for _, dv := range e.Devices {
			mean = append(mean, fmtF(dv.MeanW, 1))
			peak = append(peak, fmtF(dv.PeakW, 1))
			samples += dv.Samples
		}
		t.rows = append(t.rows, []string{b.Addr, fmt.Sprint(a.N), fmtF(e.WindowS, 3), fmt.Sprintf("%d / %s", samples, fmtF(e.IntervalS, 3)), pct(e.Coverage),
			strings.Join(mean, " / "), strings.Join(peak, " / "), fmtF(e.Joules, 2), fmtPtr(e.JoulesPerOutputToken, func(x float64) string { return fmtF(x, 4) }),
			fmtPtr(e.JoulesPerRequest, func(x float64) string { return fmtF(x, 2) })})
	}
	if len(t.rows) == 0 {
		s.p("No measured block kept GPU power samples over its window: energy is not observed.")
		return
	}
	label := ""
	if sim {
		label = " The GPUs are simulated: these are simulated energies, not measurements."
	}
	s.p("%s. Mean power is time-weighted over the covered part of the window; an energy figure enters a decision rule only when the samples cover at least %s of it.%s",
		r.Summary.Statistics.Energy.Basis, pct(minEnergyCoverage), label)
	s.tab(t)
}

// tailsSection shows the certified tails of each accepted cell.
func (r *Report) tailsSection(d *document) {
	s := d.add("tails", "Tail percentiles and their certification")
	s.p("Each percentile carries its sample count and a distribution-free 95%% interval from order statistics ([x(l), x(u)], \"open\" where the sample has too few values to bound that side). A percentile is certified only from the count MLPerf LoadGen's early stopping needs for a one-sided %s claim (%d for p90, %d for p95, %d for p99); below it the figure is descriptive, per block and pooled alike, and never enters a rule.",
		pct(stats.CertifyConfidence), stats.CertifiedMin(0.90, stats.CertifyConfidence), stats.CertifiedMin(0.95, stats.CertifyConfidence), stats.CertifiedMin(0.99, stats.CertifyConfidence))
	t := &table{head: []string{"Cell", "Metric", "p90", "p95", "p99"}}
	for _, row := range r.Summary.Rows {
		for _, m := range []string{"ttft_ms", "tpot_ms", "e2e_ms"} {
			bs := row.Tails[m]
			if len(bs) == 0 {
				continue
			}
			cells := []string{row.CellID, m}
			for _, b := range bs {
				cells = append(cells, quantileText(b))
			}
			t.rows = append(t.rows, cells)
		}
	}
	if len(t.rows) == 0 {
		s.p("No accepted cell has timing figures.")
		return
	}
	t.markLegend(fmt.Sprintf("%s descriptive: n (samples) is below the count that certifies the percentile (n=samples/needed); an unmarked figure is certified.", descMark))
	s.tab(t)
}

func quantileText(b stats.QuantileBound) string {
	if b.Estimate == nil {
		return "—"
	}
	side := func(p *float64) string {
		if p == nil {
			return "open"
		}
		return fmtMS(*p)
	}
	mark := descMark
	if b.Certified {
		mark = ""
	}
	return fmt.Sprintf("%s%s [%s, %s] n=%d/%d", fmtMS(*b.Estimate), mark, side(b.Lo), side(b.Hi), b.N, b.Needed)
}

// pairsText lists a comparison's repetitions: before/after → baseline, candidate, gain.
func pairsText(c Comparison) string {
	var out []string
	for _, p := range c.Pairs {
		f := func(x float64) string { return metricNum(c.Metric, x) }
		base := f(p.Before)
		if p.After != nil {
			base = fmt.Sprintf("(%s + %s)/2 = %s", f(p.Before), f(*p.After), f(p.Baseline))
		}
		out = append(out, fmt.Sprintf("r%d: %s vs %s → %s", p.Repetition, base, f(p.Candidate), pm(p.Gain)))
	}
	return orDash(strings.Join(out, "; "))
}

type blockAttempt struct {
	b *blockRef
	a *attemptRef
}

// measuredAttempts lists every attempt of every measured matrix block that left
// records (and so has its validity checked), in plan order.
func (ev *evidence) measuredAttempts() []blockAttempt {
	var out []blockAttempt
	for _, b := range ev.blocks {
		if b.Matrix == "" || !b.measured() {
			continue
		}
		for _, a := range b.attempts {
			if a.stats != nil && a.validity != nil {
				out = append(out, blockAttempt{b, a})
			}
		}
	}
	return out
}
