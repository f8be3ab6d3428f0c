package report

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// pilotBatches is how many consecutive batches a single pilot block is cut into to
// estimate its block-to-block variation (batch means).
const pilotBatches = 4

// PowerEstimate is what the pilot (or a declared prior) says the design can resolve
// before any candidate traffic: per compared concurrency, the block-to-block
// variation of the rule's metric, the minimum detectable effect with the rule's
// matched repetitions, and the repetitions the rule's thresholds need.
type PowerEstimate struct {
	Metric      string      `json:"metric"`
	Level       float64     `json:"level"`
	Power       float64     `json:"power"`
	Repetitions int         `json:"repetitions"`
	Bracketed   bool        `json:"bracketed"` // ABBA: a drift-control arm brackets the candidate
	Cells       []PowerCell `json:"cells"`
	// Resolvable is false when some compared cell's MDE exceeds the effect the rule
	// must resolve there, or cannot be estimated.
	Resolvable bool `json:"resolvable"`
	// CandidateStarted says whether any candidate block has started.
	CandidateStarted bool `json:"candidate_traffic_started"`
	// RuleLockedBy is the first measured block of the matrix the rule judges that
	// has started: from then on a change of the rule is post-hoc (engine semantics
	// 10).
	RuleLockedBy string `json:"rule_locked_by,omitempty"`
	Flag         string `json:"flag,omitempty"`
}

// PowerCell is the estimate at one compared concurrency.
type PowerCell struct {
	Concurrency int      `json:"concurrency"`
	Role        string   `json:"role"`
	Resolve     float64  `json:"effect_to_resolve"` // min_gain, or max_protected_regression
	Source      string   `json:"source"`
	BlockCV     *float64 `json:"block_cv"`
	PairSD      *float64 `json:"pair_sd"`
	MDE         *float64 `json:"mde"`
	Needed      *int     `json:"repetitions_needed"`
	NeededMore  bool     `json:"repetitions_needed_exceeds_limit,omitempty"`
	Resolves    bool     `json:"resolves"`
}

// repLimit bounds the search for the repetitions a threshold needs.
const repLimit = 1000

// PowerFromState reads a state directory and estimates power from its pilot; nil
// when the campaign has no decision rule.
func PowerFromState(dir string) (*PowerEstimate, error) {
	ev, err := loadEvidence(dir)
	if err != nil {
		return nil, err
	}
	return ev.power(), nil
}

// power estimates the design's power; nil without a rule.
func (ev *evidence) power() *PowerEstimate {
	rule := ev.plan.Campaign.Decision
	if rule == nil {
		return nil
	}
	p := &PowerEstimate{Metric: rule.PrimaryMetric, Level: Level, Power: stats.Power, Repetitions: max(rule.MatchedRepetitions, 1), Resolvable: true}
	p.Bracketed = ev.driftArm(rule.Matrix, rule.BaselineArm, rule.CandidateArm) != ""
	for _, c := range ev.cells {
		if c.Matrix != rule.Matrix || c.Arm != rule.CandidateArm {
			continue
		}
		for _, b := range c.Blocks {
			p.CandidateStarted = p.CandidateStarted || b.Attempts > 0
		}
	}
	if blk, _, err := engine.DecisionLock(ev.dir, ev.records); err == nil {
		p.RuleLockedBy = blk
	}
	tgt := ev.armTarget(rule.Matrix, rule.BaselineArm)
	add := func(role, sel string, resolve float64) {
		var conc int
		if _, err := fmt.Sscanf(sel, "c%d", &conc); err != nil {
			return
		}
		pc := PowerCell{Concurrency: conc, Role: role, Resolve: resolve}
		var cv float64
		switch {
		case rule.BlockCV != nil:
			cv, pc.Source = *rule.BlockCV, "declared block_cv"
		default:
			cv, pc.Source = ev.pilotCV(tgt, conc, rule.PrimaryMetric)
		}
		if cv > 0 {
			sd := stats.PairSD(cv, p.Bracketed)
			pc.BlockCV, pc.PairSD = &cv, &sd
			if p.Repetitions >= 2 {
				m := stats.MDE(sd, p.Repetitions, Level, stats.Power)
				pc.MDE = &m
				pc.Resolves = m <= resolve
			}
			if n, ok := stats.RepetitionsNeeded(sd, resolve, Level, stats.Power, repLimit); resolve > 0 {
				pc.Needed, pc.NeededMore = &n, !ok
			}
		}
		if !pc.Resolves {
			p.Resolvable = false
		}
		p.Cells = append(p.Cells, pc)
	}
	for _, sel := range rule.PrimaryCells {
		add("primary", sel, rule.MinGain)
	}
	for _, sel := range rule.ProtectedCells {
		add("protected", sel, rule.MaxProtectedRegression)
	}
	if !p.Resolvable {
		when := "no measured block of the matrix the rule judges has started, so the rule can still be amended prospectively (rigor plan diff --record)"
		if p.RuleLockedBy != "" {
			when = p.RuleLockedBy + ", a measured block of the matrix the rule judges, has started, so an amendment of the rule now is post-hoc and can never promote"
		}
		p.Flag = fmt.Sprintf("the rule cannot be resolved with %d matched repetition(s) at every compared cell; %s", p.Repetitions, when)
	}
	return p
}

// pilotCV estimates the coefficient of variation of a block's metric at one
// concurrency on the baseline's target from the pilot: between pilot blocks when
// there are two or more, otherwise by batch means inside the one pilot block.
func (ev *evidence) pilotCV(target string, conc int, metric string) (float64, string) {
	var blocks []*blockRef
	for _, b := range ev.blocks {
		a := b.settling()
		if b.Matrix == "" && b.Phase == "pilot" && b.Conc == conc && text(b.Target["name"]) == target &&
			a != nil && a.End.Status == engine.StatusSucceeded {
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		return 0, fmt.Sprintf("no pilot block at C%d on %s has succeeded yet (or declare block_cv)", conc, target)
	}
	recs := make([][]loadgen.Record, len(blocks))
	for i, b := range blocks {
		recs[i] = ev.pilotRecords(b)
	}
	if len(blocks) >= 2 {
		var xs []float64
		for _, r := range recs {
			if x, ok := batchFigure(r, metric); ok {
				xs = append(xs, x)
			}
		}
		if len(xs) >= 2 {
			return stats.SD(xs) / stats.Mean(xs), fmt.Sprintf("between %d pilot blocks at C%d", len(xs), conc)
		}
	}
	r := recs[0]
	slices.SortFunc(r, func(a, b loadgen.Record) int { return a.Index - b.Index })
	nb := pilotBatches
	if len(r) < 2*pilotBatches {
		nb = 2
	}
	if len(r) < 2*nb {
		return 0, fmt.Sprintf("%s has %d records, too few to estimate its variation (or declare block_cv)", blocks[0].Addr, len(r))
	}
	var xs []float64
	size := len(r) / nb
	for i := range nb {
		hi := (i + 1) * size
		if i == nb-1 {
			hi = len(r)
		}
		if x, ok := batchFigure(r[i*size:hi], metric); ok {
			xs = append(xs, x)
		}
	}
	if len(xs) < 2 {
		return 0, fmt.Sprintf("%s: %s cannot be estimated from batches of one block (declare block_cv)", blocks[0].Addr, metric)
	}
	cv := stats.SD(xs) / stats.Mean(xs) / math.Sqrt(float64(len(xs)))
	return cv, fmt.Sprintf("batch means of %s: %d consecutive batches of the one pilot block, taken as independent: block CV = batch CV/√%d", blocks[0].Addr, len(xs), len(xs))
}

// pilotRecords reads a pilot block's records (small: a pilot is a few requests).
func (ev *evidence) pilotRecords(b *blockRef) []loadgen.Record {
	a := b.settling()
	art, ok := a.artefact("requests.jsonl")
	if !ok {
		return nil
	}
	f, err := os.Open(filepath.Join(ev.dir, filepath.FromSlash(art.Path)))
	if err != nil {
		return nil
	}
	defer f.Close()
	recs, _ := loadgen.ReadRecords(f)
	return recs
}

// batchFigure is a metric over a set of records: throughput as Σ completion tokens
// over the span from the first send to the last end; a p50 metric as the median of
// the visible successes' figures. Other metrics have no batch estimate.
func batchFigure(recs []loadgen.Record, metric string) (float64, bool) {
	if metric == "aggregate_output_tok_s" {
		lo, hi, tok := math.Inf(1), math.Inf(-1), 0
		for _, r := range recs {
			if r.SendAtMS != nil {
				lo = math.Min(lo, *r.SendAtMS)
			}
			if r.EndAtMS != nil {
				hi = math.Max(hi, *r.EndAtMS)
			}
			if r.Usage != nil {
				tok += r.Usage.CompletionTokens
			}
		}
		if !(hi > lo) || tok == 0 {
			return 0, false
		}
		return float64(tok) / ((hi - lo) / 1000), true
	}
	fig := map[string]func(loadgen.Record) (float64, bool){
		"ttft_ms_p50": loadgen.VisibleTTFTMillis, "tpot_ms_p50": loadgen.TPOTMillis,
		"e2e_ms_p50": loadgen.E2EMillis, "decode_tok_s_p50": loadgen.DecodeTokPerS,
	}[metric]
	if fig == nil {
		return 0, false
	}
	var xs []float64
	for _, r := range recs {
		if v, ok := fig(r); ok && r.Outcome == loadgen.OK {
			xs = append(xs, v)
		}
	}
	if len(xs) == 0 {
		return 0, false
	}
	slices.Sort(xs)
	return loadgen.Percentile(xs, 0.5), true
}

// Lines states the estimate in sentences, the same in the report, rigor status and
// plan show --state.
func (p *PowerEstimate) Lines() []string {
	if p == nil {
		return []string{"minimum detectable effect: the campaign has no decision rule"}
	}
	design := "candidate against one incumbent block"
	if p.Bracketed {
		design = "candidate against the mean of the incumbent blocks before and after it (ABBA)"
	}
	out := []string{fmt.Sprintf("minimum detectable effect of %s (%s; %d%% power, two-sided %d%% interval, %d matched repetition(s)):",
		p.Metric, design, int(math.Round(p.Power*100)), int(math.Round(p.Level*100)), p.Repetitions)}
	for _, c := range p.Cells {
		what := "gain"
		if c.Role == "protected" {
			what = "regression"
		}
		if c.BlockCV == nil {
			out = append(out, fmt.Sprintf("  C%d (%s): not estimable yet: %s", c.Concurrency, c.Role, c.Source))
			continue
		}
		s := fmt.Sprintf("  C%d (%s): block CV %s (%s), paired SD %s", c.Concurrency, c.Role, pct(*c.BlockCV), c.Source, pct(*c.PairSD))
		if c.MDE != nil {
			s += fmt.Sprintf("; MDE %s with %d repetitions", pct(*c.MDE), p.Repetitions)
		} else {
			s += fmt.Sprintf("; no MDE with %d repetition (an interval needs 2)", p.Repetitions)
		}
		switch {
		case c.Needed == nil:
		case c.NeededMore:
			s += fmt.Sprintf("; a %s of %s needs more than %d repetitions", what, pct(c.Resolve), repLimit)
		default:
			s += fmt.Sprintf("; a %s of %s needs %d repetitions", what, pct(c.Resolve), *c.Needed)
		}
		if c.Resolves {
			s += ": resolvable"
		} else {
			s += ": NOT resolvable"
		}
		out = append(out, s)
	}
	if p.Flag != "" {
		out = append(out, "FLAG: "+p.Flag)
	}
	return out
}

// String is Lines joined.
func (p *PowerEstimate) String() string { return strings.Join(p.Lines(), "\n") }
