package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/plans"
)

// Verdict is the decision rule applied to the evidence. Promoted is true only when
// every comparison is eligible and every criterion holds.
type Verdict struct {
	Promoted    bool          `json:"promoted"`
	Rule        *decisionRule `json:"rule"`
	Eligible    bool          `json:"eligible"`
	Verdict     string        `json:"verdict"`
	Reasons     []string      `json:"reasons"`
	Comparisons []Comparison  `json:"comparisons"`
}

// Comparison is one cell selector of the rule: baseline against candidate.
type Comparison struct {
	Role           string      `json:"role"` // primary or protected
	Cell           string      `json:"cell"`
	Metric         string      `json:"metric"`
	HigherIsBetter bool        `json:"higher_is_better"`
	Baseline       *CellFigure `json:"baseline"`
	Candidate      *CellFigure `json:"candidate"`
	Eligible       bool        `json:"eligible"`
	Ineligible     string      `json:"ineligible_reason,omitempty"`
	// Gain is the candidate's relative improvement over the baseline, signed so that
	// positive is better whatever the metric's direction.
	Gain      *float64 `json:"gain"`
	Criterion string   `json:"criterion"`
	Holds     bool     `json:"holds"`
}

// CellFigure is the metric of one arm's cell over the matched repetitions.
type CellFigure struct {
	CellID         string    `json:"cell_id"`
	Disposition    string    `json:"disposition"`
	FailedRequests int       `json:"failed_requests"`
	Repetitions    []int     `json:"repetitions"`
	Values         []float64 `json:"values"`
	Mean           *float64  `json:"mean"`
}

func blockMetric(st *blockStats, metric string) (float64, bool) {
	pick := func(p *float64) (float64, bool) {
		if p == nil {
			return 0, false
		}
		return *p, true
	}
	switch metric {
	case "aggregate_output_tok_s":
		return st.AggregateTokS(), st.WallS() > 0
	case "decode_tok_s_p50":
		return pick(st.Decodep50)
	case "ttft_ms_p50":
		return pick(st.TTFTp50)
	case "tpot_ms_p50":
		return pick(st.TPOTp50)
	case "e2e_ms_p50":
		return pick(st.E2Ep50)
	}
	return 0, false
}

// decide applies the campaign's decision rule to the evidence.
func (ev *evidence) decide(rows map[string]*Row) Verdict {
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
	k := max(rule.MatchedRepetitions, 1)
	compare := func(role, sel string, threshold float64) Comparison {
		c := Comparison{Role: role, Cell: sel, Metric: rule.PrimaryMetric, HigherIsBetter: higher}
		if role == "primary" {
			c.Criterion = fmt.Sprintf("gain ≥ %s", pct(threshold))
		} else {
			c.Criterion = fmt.Sprintf("regression ≤ %s", pct(threshold))
		}
		conc, err := strconv.Atoi(strings.TrimPrefix(sel, "c"))
		if err != nil {
			c.Ineligible = fmt.Sprintf("%q is not a cell selector", sel)
			return c
		}
		var why []string
		c.Baseline, why = ev.figure(rule.BaselineArm, conc, k, rule.PrimaryMetric, rows, why)
		c.Candidate, why = ev.figure(rule.CandidateArm, conc, k, rule.PrimaryMetric, rows, why)
		if len(why) > 0 {
			c.Ineligible = strings.Join(why, "; ")
			return c
		}
		c.Eligible = true
		b, x := *c.Baseline.Mean, *c.Candidate.Mean
		if b == 0 {
			c.Eligible, c.Ineligible = false, "baseline mean is zero"
			return c
		}
		g := (x - b) / b
		if !higher {
			g = (b - x) / b
		}
		c.Gain = &g
		if role == "primary" {
			c.Holds = g >= threshold
		} else {
			c.Holds = -g <= threshold
		}
		return c
	}
	for _, sel := range rule.PrimaryCells {
		v.Comparisons = append(v.Comparisons, compare("primary", sel, rule.MinGain))
	}
	for _, sel := range rule.ProtectedCells {
		v.Comparisons = append(v.Comparisons, compare("protected", sel, rule.MaxProtectedRegression))
	}
	v.Eligible = len(v.Comparisons) > 0
	holds := v.Eligible
	for _, c := range v.Comparisons {
		switch {
		case !c.Eligible:
			v.Eligible, holds = false, false
			v.Reasons = append(v.Reasons, fmt.Sprintf("%s cell %s is ineligible: %s", c.Role, c.Cell, c.Ineligible))
		case !c.Holds && c.Role == "primary":
			holds = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("primary cell %s: gain %s is below the minimum %s", c.Cell, pct(*c.Gain), pct(rule.MinGain)))
		case !c.Holds:
			holds = false
			v.Reasons = append(v.Reasons, fmt.Sprintf("protected cell %s: regression %s exceeds the maximum %s", c.Cell, pct(-*c.Gain), pct(rule.MaxProtectedRegression)))
		}
	}
	v.Promoted = v.Eligible && holds
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

// figure finds an arm's cell at a concurrency and averages the metric over its
// first k measured repetitions. Any failure makes it ineligible.
func (ev *evidence) figure(arm string, conc, k int, metric string, rows map[string]*Row, why []string) (*CellFigure, []string) {
	var cell *cellRef
	for _, c := range ev.cells {
		if c.Arm == arm && c.Conc == conc {
			cell = c
			break
		}
	}
	if cell == nil {
		return nil, append(why, fmt.Sprintf("arm %s has no cell at concurrency %d", arm, conc))
	}
	row := rows[cell.Key]
	f := &CellFigure{CellID: cell.Key, Disposition: row.Disposition, Repetitions: []int{}, Values: []float64{}}
	for _, b := range cell.Blocks {
		if b.stats != nil {
			f.FailedRequests += b.stats.FailedN
		}
	}
	if f.FailedRequests > 0 {
		why = append(why, fmt.Sprintf("%s has %d failed request(s)", cell.Key, f.FailedRequests))
	}
	if row.Disposition != Accepted {
		why = append(why, fmt.Sprintf("%s is %s", cell.Key, row.Disposition))
	}
	sum := 0.0
	for _, b := range cell.Blocks {
		if !b.measured() || b.stats == nil || len(f.Values) == k {
			continue
		}
		x, ok := blockMetric(b.stats, metric)
		if !ok {
			continue
		}
		f.Repetitions = append(f.Repetitions, b.Repetition)
		f.Values = append(f.Values, x)
		sum += x
	}
	if len(f.Values) < k {
		why = append(why, fmt.Sprintf("%s has %d of the %d matched repetitions required", cell.Key, len(f.Values), k))
	} else {
		m := sum / float64(len(f.Values))
		f.Mean = &m
	}
	return f, why
}

func pct(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }
