package engine

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rigor-bench/rigor/plans"
)

// Pre-registration (DESIGN.md, engine semantics 10): every change of an amendment
// has a class. The classification reads only the canonical plan JSON and the
// journal, so the report can redo it for any recorded amendment.
const (
	// ClassProspective: the change touches nothing that has run and shapes no
	// analysis that measured data already exist for.
	ClassProspective = "prospective"
	// ClassPostHoc: the change shapes the analysis (decision rule, outage, frozen
	// inputs, the blocks of a matrix) and a measured block it affects has started.
	// It is recorded only with --post-hoc, labelled, and can never promote.
	ClassPostHoc = "post_hoc"
	// ClassRewrite: the change alters or removes a step that started; its evidence
	// was produced under the old configuration, so no amendment can change it.
	ClassRewrite = "rewrites_evidence"
)

// Scopes of an analysis-shaping change: what it touches in the analysis.
const (
	// ScopeDecision: the decision rule, and so the verdict.
	ScopeDecision = "decision"
	// ScopeCampaign: a campaign-wide setting that every measured block is held to
	// (outage, frozen inputs), and so every verdict.
	ScopeCampaign = "campaign"
	// ScopeMatrix prefixes "matrix NAME": the arms, cells or repetitions of one
	// matrix, and so every verdict that compares its cells.
	ScopeMatrix = "matrix "
)

// ChangeReview is one change of an amendment with its pre-registration class.
type ChangeReview struct {
	// Change names what changed: "campaign.decision.min_gain" or an instance address.
	Change string `json:"change"`
	Kind   string `json:"kind"`             // added, removed or changed
	Detail string `json:"detail,omitempty"` // old -> new, or the attributes that changed
	Class  string `json:"class"`
	// Shapes says why the change shapes the analysis ("" when it does not), and
	// Scope what it touches there.
	Shapes string `json:"shapes,omitempty"`
	Scope  string `json:"scope,omitempty"`
	// StartedBlock is the first measured block the change affects that had started
	// when the amendment was made (post-hoc), or the step it would rewrite, with
	// the journal record of that start.
	StartedBlock string `json:"started_block,omitempty"`
	StartedSeq   int    `json:"started_seq,omitempty"`
}

// Review is the classification of every change of an amendment.
type Review []ChangeReview

// Of lists the changes of one class.
func (r Review) Of(class string) []ChangeReview {
	var out []ChangeReview
	for _, c := range r {
		if c.Class == class {
			out = append(out, c)
		}
	}
	return out
}

// PostHoc reports whether any change is post-hoc.
func (r Review) PostHoc() bool { return len(r.Of(ClassPostHoc)) > 0 }

// Line says, in one line, what a change is and why it has its class.
func (c ChangeReview) Line() string {
	s := c.Change
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	} else if c.Kind != "" && !strings.HasPrefix(c.Change, "campaign.") {
		s += " (" + c.Kind + ")"
	}
	switch c.Class {
	case ClassRewrite:
		return fmt.Sprintf("%s: it started (journal record %d), and its evidence was made under the configuration it had", s, c.StartedSeq)
	case ClassPostHoc:
		return fmt.Sprintf("%s: %s, and %s, a measured block it affects, started at journal record %d", s, c.Shapes, c.StartedBlock, c.StartedSeq)
	}
	if c.Shapes != "" {
		return fmt.Sprintf("%s: %s, but no measured block it affects has started", s, c.Shapes)
	}
	return s
}

// planShape is the part of the canonical plan JSON the classification reads.
type planShape struct {
	Campaign  map[string]any `json:"campaign"`
	Instances []struct {
		Addr      string         `json:"addr"`
		Type      string         `json:"type"`
		Arm       string         `json:"arm"`
		Cell      string         `json:"cell"`
		DependsOn []string       `json:"depends_on"`
		After     []string       `json:"after"`
		Config    map[string]any `json:"config"`
		Meta      struct {
			Phase string `json:"phase"`
		} `json:"meta"`
	} `json:"instances"`
}

// driftArm is the drift-control arm of the plan's decision rule, and whether the
// rule names its arms so that it can be derived.
func (p *planShape) driftArm() (string, bool) {
	rule, _ := p.Campaign["decision"].(map[string]any)
	baseline, ok1 := rule["baseline_arm"].(string)
	candidate, ok2 := rule["candidate_arm"].(string)
	if !ok1 || !ok2 {
		return "", false
	}
	var arms []plans.ArmTarget
	for _, in := range p.Instances {
		if in.Cell == "" {
			continue
		}
		tgt, _ := in.Config["target"].(map[string]any)
		name, _ := tgt["name"].(string)
		arms = append(arms, plans.ArmTarget{Matrix: matrixName(in.Addr), Arm: in.Arm, Target: name})
	}
	matrix, _ := rule["matrix"].(string)
	return plans.DriftControlArm(arms, matrix, baseline, candidate), true
}

func parseShape(b []byte) (*planShape, error) {
	var p planShape
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// measured lists the measured blocks of a plan with their matrix ("" for a block
// step outside a matrix), in plan order.
func (p *planShape) measured() (addrs []string, matrix map[string]string) {
	matrix = map[string]string{}
	for _, in := range p.Instances {
		if in.Type != "block" || in.Meta.Phase != "measured" {
			continue
		}
		addrs = append(addrs, in.Addr)
		if in.Cell != "" {
			matrix[in.Addr] = matrixName(in.Addr)
		}
	}
	return addrs, matrix
}

// matrixName is NAME of block.NAME["arm/cN/rK"].
func matrixName(addr string) string {
	name, _, _ := strings.Cut(strings.TrimPrefix(addr, "block."), "[")
	return name
}

// decisionMatrices are the matrices a decision rule judges: those whose arms (or
// whose own name) any string of the rule names. None means the rule names nothing
// this plan can place, and then it judges every measured block.
func decisionMatrices(rules []any, shapes ...*planShape) map[string]bool {
	names := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			names[x] = true
			names[strings.TrimPrefix(x, "matrix.")] = true
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	for _, r := range rules {
		walk(r)
	}
	out := map[string]bool{}
	for _, s := range shapes {
		for _, in := range s.Instances {
			if in.Cell == "" {
				continue
			}
			if m := matrixName(in.Addr); names[in.Arm] || names[m] {
				out[m] = true
			}
		}
	}
	return out
}

// decisionBlocks are the measured blocks a decision rule judges: those of the
// matrices it names, or every one when it names none this plan can place.
func decisionBlocks(measured []string, matrixOf map[string]string, decided map[string]bool) []string {
	if len(decided) == 0 {
		return measured
	}
	var out []string
	for _, a := range measured {
		if decided[matrixOf[a]] {
			out = append(out, a)
		}
	}
	return out
}

// startedAt maps each step to the journal record of its first start.
func startedAt(recs []Record) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		if r.Kind == KindStepStart {
			if _, ok := out[r.Step]; !ok {
				out[r.Step] = r.Seq
			}
		}
	}
	return out
}

// firstStarted is the earliest started of addrs.
func firstStarted(addrs []string, started map[string]int) (string, int) {
	best, seq := "", 0
	for _, a := range addrs {
		if s, ok := started[a]; ok && (seq == 0 || s < seq) {
			best, seq = a, s
		}
	}
	return best, seq
}

// campaignShapes says why a campaign setting shapes the analysis, and what it
// touches; "" for a setting that does not (the name and the description).
func campaignShapes(key string) (why, scope string) {
	switch key {
	case "name", "description":
		return "", ""
	case "decision":
		return "the decision rule decides promotion", ScopeDecision
	case "outage":
		return "the outage budget and reserve decide which measured blocks run and which are deferred", ScopeCampaign
	case "frozen":
		return "the frozen inputs are what every measured block is held to", ScopeCampaign
	}
	return fmt.Sprintf("campaign setting %q is part of the pre-registration", key), ScopeCampaign
}

// classify gives every change of a diff between two canonical plans its class,
// given when each step first started (journal record numbers).
func classify(oldJSON, newJSON []byte, d plans.Diff, started map[string]int) (Review, error) {
	oldP, err := parseShape(oldJSON)
	if err != nil {
		return nil, fmt.Errorf("effective plan: %w", err)
	}
	newP, err := parseShape(newJSON)
	if err != nil {
		return nil, fmt.Errorf("new plan: %w", err)
	}
	measured, matrixOf := oldP.measured()
	inMatrix := func(m string) []string {
		var out []string
		for _, a := range measured {
			if matrixOf[a] == m {
				out = append(out, a)
			}
		}
		return out
	}
	decided := decisionMatrices([]any{oldP.Campaign["decision"], newP.Campaign["decision"]}, oldP, newP)
	var rev Review
	for _, c := range d.Campaign {
		key, _, _ := strings.Cut(c.Path, ".")
		cr := ChangeReview{Change: "campaign." + c.Path, Kind: "changed", Detail: orAbsent(c.Old) + " -> " + orAbsent(c.New), Class: ClassProspective}
		cr.Shapes, cr.Scope = campaignShapes(key)
		if cr.Shapes != "" {
			affected := measured
			if cr.Scope == ScopeDecision {
				affected = decisionBlocks(measured, matrixOf, decided)
			}
			if b, seq := firstStarted(affected, started); b != "" {
				cr.Class, cr.StartedBlock, cr.StartedSeq = ClassPostHoc, b, seq
			}
		}
		rev = append(rev, cr)
	}
	// An added or removed arm can change which arm the rule takes as its drift
	// control, and so what it compares, without touching the rule itself.
	if oldDrift, ok := oldP.driftArm(); ok {
		if newDrift, ok := newP.driftArm(); ok && newDrift != oldDrift {
			cr := ChangeReview{Change: "drift control of the decision rule", Kind: "changed", Detail: orAbsent(oldDrift) + " -> " + orAbsent(newDrift), Class: ClassProspective,
				Shapes: "the decision rule compares the candidate with the mean of the baseline and its drift-control arm (the last arm after the candidate on the baseline's target)", Scope: ScopeDecision}
			if b, seq := firstStarted(decisionBlocks(measured, matrixOf, decided), started); b != "" {
				cr.Class, cr.StartedBlock, cr.StartedSeq = ClassPostHoc, b, seq
			}
			rev = append(rev, cr)
		}
	}
	oldAddrs := map[string]bool{}
	for _, in := range oldP.Instances {
		oldAddrs[in.Addr] = true
	}
	newDeps := map[string]map[string][]string{}
	for _, in := range newP.Instances {
		newDeps[in.Addr] = map[string][]string{"depends_on": in.DependsOn, "after": in.After}
	}
	oldDeps := map[string]map[string][]string{}
	for _, in := range oldP.Instances {
		oldDeps[in.Addr] = map[string][]string{"depends_on": in.DependsOn, "after": in.After}
	}
	for _, c := range d.Changes {
		cr := ChangeReview{Change: c.Addr, Kind: c.Kind, Class: ClassProspective}
		if c.Kind == "changed" {
			var paths []string
			for _, a := range c.Attrs {
				paths = append(paths, a.Path)
			}
			cr.Detail = "changed: " + strings.Join(paths, ", ")
		}
		seq, ran := started[c.Addr]
		// A step that only gains added steps to wait for keeps what it recorded: the
		// new dependencies did not exist when it ran, so they were never its inputs.
		grows := c.Kind == "changed" && onlyGainsAdded(c, oldDeps[c.Addr], newDeps[c.Addr], oldAddrs)
		m, inMatrixMeasured := matrixOf[c.Addr]
		switch {
		case c.Kind == "added" || grows:
		case ran:
			cr.Class, cr.StartedBlock, cr.StartedSeq = ClassRewrite, c.Addr, seq
		case inMatrixMeasured:
			// Blocks of a matrix with measured data: removing or changing them
			// changes its arms, cells or repetitions after the fact.
			cr.Shapes = "the blocks of a matrix are its arms, cells and repetitions, which shape every figure and verdict drawn from it"
			cr.Scope = ScopeMatrix + m
			if b, s := firstStarted(inMatrix(m), started); b != "" {
				cr.Class, cr.StartedBlock, cr.StartedSeq = ClassPostHoc, b, s
			}
		}
		rev = append(rev, cr)
	}
	return rev, nil
}

// onlyGainsAdded reports whether a change touches only what an instance waits for
// (depends_on, after), gaining only instances the old plan did not have.
func onlyGainsAdded(c plans.Change, oldDeps, newDeps map[string][]string, oldAddrs map[string]bool) bool {
	if len(c.Attrs) == 0 {
		return false
	}
	for _, a := range c.Attrs {
		if a.Path != "depends_on" && a.Path != "after" {
			return false
		}
		for _, d := range oldDeps[a.Path] {
			if !slices.Contains(newDeps[a.Path], d) {
				return false
			}
		}
		for _, d := range newDeps[a.Path] {
			if !slices.Contains(oldDeps[a.Path], d) && oldAddrs[d] {
				return false
			}
		}
	}
	return true
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

// RecordedReview is the classification of a recorded amendment, redone from the
// journal as it stood when the amendment was recorded.
type RecordedReview struct {
	Number int
	Seq    int
	// Labelled is what the amendment's record says: recorded with --post-hoc.
	Labelled bool
	Review   Review
}

// PostHoc reports whether the amendment is post-hoc: labelled so, or found so now.
func (r RecordedReview) PostHoc() bool { return r.Labelled || r.Review.PostHoc() }

// ReviewRecorded re-classifies every amendment recorded in recs (the journal of
// stateDir): the plan before it (plan/plan.json or the previous amendment's), its
// plan, and the steps that had started before its record. A label can be lost or
// an amendment older than labels; the evidence still says what it was.
func ReviewRecorded(stateDir string, recs []Record) ([]RecordedReview, error) {
	var out []RecordedReview
	var prev []byte
	for i, r := range recs {
		if r.Kind != KindAmendment {
			continue
		}
		if prev == nil {
			b, err := readPlanJSON(stateDir)
			if err != nil {
				return nil, err
			}
			prev = b
		}
		a, err := readAmendment(stateDir, r.Amendment)
		if err != nil {
			return nil, err
		}
		now, err := plans.CanonicalJSON(a.Plan)
		if err != nil {
			return nil, err
		}
		d, err := plans.DiffPlans(prev, now)
		if err != nil {
			return nil, err
		}
		rev, err := classify(prev, now, d, startedAt(recs[:i]))
		if err != nil {
			return nil, err
		}
		out = append(out, RecordedReview{Number: r.Amendment, Seq: r.Seq, Labelled: r.PostHoc || a.PostHoc, Review: rev})
		prev = now
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out, nil
}

// DecisionLock says which started measured block, if any, makes a change of the
// effective plan's decision rule post-hoc now: "" while the rule can still be
// amended prospectively.
func DecisionLock(stateDir string, recs []Record) (string, int, error) {
	b, _, err := EffectivePlan(stateDir)
	if err != nil {
		return "", 0, err
	}
	p, err := parseShape(b)
	if err != nil {
		return "", 0, err
	}
	measured, matrixOf := p.measured()
	decided := decisionMatrices([]any{p.Campaign["decision"]}, p)
	blk, seq := firstStarted(decisionBlocks(measured, matrixOf, decided), startedAt(recs))
	return blk, seq, nil
}
