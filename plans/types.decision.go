package plans

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

const blockDecision = "decision"

// DecisionMetrics are the primary metrics a decision rule may name, each with its
// direction: true when higher is better. The report computes them per measured
// block and compares the candidate's blocks with the incumbent's repetition by
// repetition.
var DecisionMetrics = map[string]bool{
	"aggregate_output_tok_s": true,  // Σ completion tokens / block wall time
	"decode_tok_s_p50":       true,  // block median of 1000 / capacity TPOT
	"ttft_ms_p50":            false, // block median of visible TTFT
	"tpot_ms_p50":            false, // block median of capacity TPOT
	"e2e_ms_p50":             false, // block median of E2E
	// Tail percentiles of a block: they enter a verdict only when every compared
	// block has the sample count that certifies them (report, stats.CertifiedMin).
	"ttft_p90_ms": false, "ttft_p95_ms": false, "ttft_p99_ms": false,
	"tpot_p90_ms": false, "tpot_p95_ms": false, "tpot_p99_ms": false,
	"e2e_p90_ms": false, "e2e_p95_ms": false, "e2e_p99_ms": false,
	// GPU energy over the block window / completion tokens of the block.
	"joules_per_output_token": false,
}

// Criteria a decision rule may use.
const (
	// CriterionPoint: the mean paired gain must reach min_gain (seed 001's rule as
	// written); the interval is reported but does not decide.
	CriterionPoint = "point"
	// CriterionInterval: the 95% interval's lower bound of the gain must reach
	// min_gain on primary cells, and its bound on the regression must stay within
	// max_protected_regression on protected cells. The default.
	CriterionInterval = "interval"
)

var criteria = []string{CriterionInterval, CriterionPoint}

// Decision is the pre-registered decision rule of a campaign: which cells decide,
// by how much the candidate must win there, and how much it may lose on the
// protected cells. It is part of the canonical plan (campaign.decision), so changing
// it after the freeze is an amendment.
//
//	decision "promotion" {
//	  matrix                   = step.block.primary # optional when one matrix has both arms
//	  primary_metric           = "aggregate_output_tok_s"
//	  primary_cells            = ["c4"]
//	  baseline_arm             = "incumbent_before"
//	  candidate_arm            = "candidate_1"
//	  protected_cells          = ["c1"]
//	  min_gain                 = 0.05
//	  max_protected_regression = 0.03
//	  matched_repetitions      = 3
//	  criterion                = "interval" # or "point"
//	  max_drift                = 0.02       # default: half the smallest effect to resolve
//	  block_cv                 = 0.02       # declared block-to-block variation (prior)
//	  promotion                = true       # false: diagnostic only, nothing is promoted
//	}
//
// A cell selector is "cN": concurrency N of both arms. The rule compares arms of one
// matrix: the one it names, or the only one that has both arms. Arms and cells are
// checked against that matrix when the plan is loaded (Plan.checkDecision), so a
// typo is a validate error, not a surprise in the report.
type Decision struct {
	Name string
	// Matrix is the matrix the rule compares, resolved by checkDecision: the one
	// named by the matrix attribute, or the only matrix with both arms.
	Matrix                 string
	PrimaryMetric          string
	PrimaryCells           []string
	BaselineArm            string
	CandidateArm           string
	ProtectedCells         []string
	MinGain                float64
	MaxProtectedRegression float64
	MatchedRepetitions     int
	// Criterion is CriterionInterval unless the rule says otherwise.
	Criterion string
	// MaxDrift bounds the drift between the incumbent arms before and after the
	// candidate; nil means the default, half the smallest effect the rule must
	// resolve (min_gain, and max_protected_regression when there are protected
	// cells).
	MaxDrift *float64
	// BlockCV is a declared coefficient of variation of a block's primary metric
	// between repetitions, used for the minimum detectable effect instead of the
	// pilot's estimate; nil when not declared.
	BlockCV *float64
	// Promotion is false for a diagnostic-only campaign (seed 001: "no promotion is
	// authorised"): the rule's comparisons are reported, and nothing is promoted.
	Promotion bool
	DeclRange hcl.Range

	matrixRef *hcl.Attribute       // the matrix attribute, nil when absent
	attrs     hcl.Attributes       // for the ranges of arms and cells
	cellRange map[string]hcl.Range // each cell selector's own range
}

// DefaultMaxDrift is the drift bound a rule gets when it declares none.
func (d *Decision) DefaultMaxDrift() float64 {
	m := d.MinGain
	if len(d.ProtectedCells) > 0 && d.MaxProtectedRegression > 0 && d.MaxProtectedRegression < m {
		m = d.MaxProtectedRegression
	}
	return m / 2
}

var decisionSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "primary_metric", Required: true},
		{Name: "primary_cells", Required: true},
		{Name: "baseline_arm", Required: true},
		{Name: "candidate_arm", Required: true},
		{Name: "protected_cells"},
		{Name: "min_gain", Required: true},
		{Name: "max_protected_regression"},
		{Name: "matched_repetitions"},
		{Name: "criterion"},
		{Name: "max_drift"},
		{Name: "block_cv"},
		{Name: "matrix"},
		{Name: "promotion"},
	},
}

var cellSelector = regexp.MustCompile(`^c[1-9][0-9]*$`)

// addDecision decodes a decision block; a campaign has at most one.
func (p *Plan) addDecision(b *hcl.Block) hcl.Diagnostics {
	if p.Decision != nil {
		return hcl.Diagnostics{errorAt(b.DefRange, "Duplicate decision block",
			"A campaign has at most one decision rule; the first is at %s.", p.Decision.DeclRange)}
	}
	d, diags := decodeDecision(b)
	if !diags.HasErrors() {
		p.Decision = d
	}
	return diags
}

func decodeDecision(b *hcl.Block) (*Decision, hcl.Diagnostics) {
	d := &Decision{Name: b.Labels[0], DeclRange: b.DefRange, MatchedRepetitions: 1, Criterion: CriterionInterval,
		Promotion: true, cellRange: map[string]hcl.Range{}}
	content, diags := b.Body.Content(decisionSchema)
	diags = listValid(diags, "decision", schemaNames(decisionSchema))
	if content == nil || diags.HasErrors() {
		return nil, diags
	}
	d.attrs = content.Attributes
	if a, ok := content.Attributes["matrix"]; ok {
		if _, ok := matrixRefName(a); !ok {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid matrix reference",
				"matrix must name a matrix block as a reference, such as matrix = step.block.primary."))
		} else {
			d.matrixRef = a
		}
	}
	if a, ok := content.Attributes["promotion"]; ok {
		v, vd := a.Expr.Value(nil)
		diags = append(diags, vd...)
		if !vd.HasErrors() {
			if v.Type() != cty.Bool || v.IsNull() {
				diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type",
					"promotion must be true (the rule may promote the candidate) or false (diagnostic only: no promotion is authorised)."))
			} else {
				d.Promotion = v.True()
			}
		}
	}
	str := func(name string) string {
		a, ok := content.Attributes[name]
		if !ok {
			return ""
		}
		s, sd := staticString(a)
		diags = append(diags, sd...)
		return s
	}
	cells := func(name string) []string {
		a, ok := content.Attributes[name]
		if !ok {
			return nil
		}
		v, vd := a.Expr.Value(nil)
		diags = append(diags, vd...)
		if vd.HasErrors() {
			return nil
		}
		lv, err := convert.Convert(v, cty.List(cty.String))
		if err != nil || lv.IsNull() || !lv.IsWhollyKnown() {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid cell list", "%s must be a list of cell selectors such as [\"c4\"].", name))
			return nil
		}
		// Each selector's own range when the list is written out, so a wrong cell
		// is shown where it is.
		elems, _ := hcl.ExprList(a.Expr)
		var out []string
		for i, e := range lv.AsValueSlice() {
			s := e.AsString()
			rng := a.Expr.Range()
			if len(elems) == lv.LengthInt() {
				rng = elems[i].Range()
			}
			if !cellSelector.MatchString(s) {
				diags = append(diags, errorAt(rng, "Invalid cell selector",
					"%q is not a cell selector: use \"cN\" for concurrency N of both the baseline and the candidate arm.", s))
				continue
			}
			d.cellRange[name+"/"+s] = rng
			out = append(out, s)
		}
		return out
	}
	num := func(name string, lo, hi float64) (float64, bool) {
		a, ok := content.Attributes[name]
		if !ok {
			return 0, false
		}
		v, vd := a.Expr.Value(nil)
		diags = append(diags, vd...)
		nv, err := convert.Convert(v, cty.Number)
		if vd.HasErrors() || err != nil || nv.IsNull() || !nv.IsKnown() {
			diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a number.", name))
			return 0, false
		}
		f, _ := nv.AsBigFloat().Float64()
		if f < lo || f > hi {
			diags = append(diags, errorAt(a.Expr.Range(), "Value out of range", "%s must be between %g and %g.", name, lo, hi))
		}
		return f, true
	}
	d.PrimaryMetric = str("primary_metric")
	if _, ok := DecisionMetrics[d.PrimaryMetric]; !ok && !diags.HasErrors() {
		names := make([]string, 0, len(DecisionMetrics))
		for k := range DecisionMetrics {
			names = append(names, k)
		}
		sort.Strings(names)
		diags = append(diags, errorAt(content.Attributes["primary_metric"].Expr.Range(), "Unknown primary metric",
			"%q is not a decision metric.%s Valid metrics: %s.", d.PrimaryMetric, didYouMean(d.PrimaryMetric, names), strings.Join(names, ", ")))
	}
	if a, ok := content.Attributes["criterion"]; ok {
		c, cd := staticString(a)
		diags = append(diags, cd...)
		if !cd.HasErrors() && !slices.Contains(criteria, c) {
			diags = append(diags, errorAt(a.Expr.Range(), "Unknown criterion",
				"criterion %q is not one of %s.%s", c, strings.Join(criteria, ", "), didYouMean(c, criteria)))
		} else if !cd.HasErrors() {
			d.Criterion = c
		}
	}
	if f, ok := num("max_drift", 0, 1); ok {
		d.MaxDrift = &f
	}
	if f, ok := num("block_cv", 0, 1); ok {
		if f == 0 {
			diags = append(diags, errorAt(content.Attributes["block_cv"].Expr.Range(), "Value out of range",
				"block_cv must be greater than 0: no two blocks ever measure the same figure."))
		}
		d.BlockCV = &f
	}
	d.PrimaryCells = cells("primary_cells")
	d.ProtectedCells = cells("protected_cells")
	d.BaselineArm = str("baseline_arm")
	d.CandidateArm = str("candidate_arm")
	if d.BaselineArm != "" && d.BaselineArm == d.CandidateArm {
		diags = append(diags, errorAt(content.Attributes["candidate_arm"].Expr.Range(), "Candidate is the baseline",
			"baseline_arm and candidate_arm must name two different arms."))
	}
	d.MinGain, _ = num("min_gain", 0, 10)
	d.MaxProtectedRegression, _ = num("max_protected_regression", 0, 1)
	if r, ok := num("matched_repetitions", 1, 1000); ok {
		d.MatchedRepetitions = int(r)
	}
	if len(d.PrimaryCells) == 0 && !diags.HasErrors() {
		diags = append(diags, errorAt(content.Attributes["primary_cells"].Expr.Range(), "No primary cells", "primary_cells must name at least one cell."))
	}
	return d, diags
}

// canonical is the decision rule as plain data for the canonical plan JSON.
func (d *Decision) canonical() map[string]any {
	num := func(f float64) json.Number { return json.Number(strconv.FormatFloat(f, 'g', -1, 64)) }
	list := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	m := map[string]any{
		"criterion":                d.Criterion,
		"name":                     d.Name,
		"primary_metric":           d.PrimaryMetric,
		"primary_cells":            list(d.PrimaryCells),
		"baseline_arm":             d.BaselineArm,
		"candidate_arm":            d.CandidateArm,
		"protected_cells":          list(d.ProtectedCells),
		"min_gain":                 num(d.MinGain),
		"max_protected_regression": num(d.MaxProtectedRegression),
		"matched_repetitions":      d.MatchedRepetitions,
	}
	if d.Matrix != "" {
		m["matrix"] = d.Matrix
	}
	// Absent when true (the default), so a promoting rule reads as it always did.
	if !d.Promotion {
		m["promotion"] = false
	}
	// Absent when not declared, so the report can tell a declared bound or prior
	// from a default.
	if d.MaxDrift != nil {
		m["max_drift"] = num(*d.MaxDrift)
	}
	if d.BlockCV != nil {
		m["block_cv"] = num(*d.BlockCV)
	}
	return m
}

// matrixRefName reads a matrix reference, step.block.NAME, and returns NAME.
func matrixRefName(a *hcl.Attribute) (string, bool) {
	tr, d := hcl.AbsTraversalForExpr(a.Expr)
	if d.HasErrors() || len(tr) != 3 || tr.RootName() != "step" {
		return "", false
	}
	typ, ok1 := tr[1].(hcl.TraverseAttr)
	name, ok2 := tr[2].(hcl.TraverseAttr)
	if !ok1 || !ok2 || typ.Name != "block" {
		return "", false
	}
	return name.Name, true
}

// checkDecision resolves the matrix the rule compares and checks the rule's arms
// and cells against it, once the matrices are expanded (their concurrencies are
// known then). Without a matrix attribute the rule compares the only matrix that
// has both of its arms; two such matrices make the rule ambiguous, and a rule that
// silently compared the first of them is what this refuses.
func (p *Plan) checkDecision() hcl.Diagnostics {
	d := p.Decision
	if d == nil {
		return nil
	}
	var names []string
	byName := map[string]*Matrix{}
	for _, m := range p.Matrices {
		names = append(names, m.Name)
		byName[m.Name] = m
	}
	armRange := func(attr string) hcl.Range {
		if a := d.attrs[attr]; a != nil {
			return a.Expr.Range()
		}
		return d.DeclRange
	}
	var m *Matrix
	switch {
	case d.matrixRef != nil:
		name, _ := matrixRefName(d.matrixRef)
		if m = byName[name]; m == nil {
			return hcl.Diagnostics{errorAt(d.matrixRef.Expr.Range(), "Reference to undeclared matrix",
				"There is no matrix %q.%s Matrices: %s.", name, didYouMean(name, names), orNone(names))}
		}
	case len(p.Matrices) == 0:
		return hcl.Diagnostics{errorAt(d.DeclRange, "Decision rule without a matrix",
			"A decision rule compares two arms of a matrix, and this campaign declares no matrix block.")}
	case len(p.Matrices) == 1:
		m = p.Matrices[0]
	default:
		var both []string
		for _, x := range p.Matrices {
			if x.hasArm(d.BaselineArm) && x.hasArm(d.CandidateArm) {
				both = append(both, x.Name)
			}
		}
		switch len(both) {
		case 1:
			m = byName[both[0]]
		case 0:
			return hcl.Diagnostics{errorAt(armRange("baseline_arm"), "No matrix has the rule's arms",
				"No matrix has both arms %q and %q; name the matrix the rule compares, such as matrix = step.block.%s, and its arms.",
				d.BaselineArm, d.CandidateArm, names[0])}
		default:
			return hcl.Diagnostics{errorAt(d.DeclRange, "Ambiguous decision rule",
				"The matrices %s all have arms %q and %q; name the one the rule compares, such as matrix = step.block.%s.",
				strings.Join(both, " and "), d.BaselineArm, d.CandidateArm, both[0])}
		}
	}
	var diags hcl.Diagnostics
	if m.Phase != "measured" {
		rng := d.DeclRange
		if d.matrixRef != nil {
			rng = d.matrixRef.Expr.Range()
		}
		diags = append(diags, errorAt(rng, "Decision rule on an unmeasured matrix",
			"Matrix %q has phase %q: a decision rule judges measured blocks only. Compare a measured matrix, or remove the matrix's phase.", m.Name, m.Phase))
	}
	diags = append(diags, p.checkMatchedRepetitions(m)...)
	arms := m.armNames()
	for _, attr := range []string{"baseline_arm", "candidate_arm"} {
		arm := d.BaselineArm
		if attr == "candidate_arm" {
			arm = d.CandidateArm
		}
		if !contains(arms, arm) {
			diags = append(diags, errorAt(armRange(attr), "Reference to undeclared arm",
				"Matrix %q has no arm %q.%s Its arms: %s.", m.Name, arm, didYouMean(arm, arms), strings.Join(arms, ", ")))
		}
	}
	var cells []string
	run := map[string]bool{}
	for _, c := range m.Concurrencies {
		s := fmt.Sprintf("c%d", c)
		cells = append(cells, s)
		run[s] = true
	}
	for _, attr := range []string{"primary_cells", "protected_cells"} {
		sels := d.PrimaryCells
		if attr == "protected_cells" {
			sels = d.ProtectedCells
		}
		for _, s := range sels {
			if !run[s] {
				diags = append(diags, errorAt(d.cellRange[attr+"/"+s], "Unknown cell",
					"%s names %q, but matrix %q runs no such concurrency.%s Its cells: %s.", attr, s, m.Name, didYouMean(s, cells), strings.Join(cells, ", ")))
			}
		}
	}
	if !diags.HasErrors() {
		d.Matrix = m.Name
	}
	return diags
}

// checkMatchedRepetitions refuses a rule that needs more matched repetitions of a
// cell than its matrix runs: every comparison would be ineligible, found only in the
// report once the campaign has run.
func (p *Plan) checkMatchedRepetitions(m *Matrix) hcl.Diagnostics {
	d := p.Decision
	a := d.attrs["matched_repetitions"]
	if a == nil {
		return nil
	}
	reps := max(m.Repetitions, 1)
	if d.MatchedRepetitions <= reps {
		return nil
	}
	return hcl.Diagnostics{errorAt(a.Expr.Range(), "Too many matched repetitions",
		"matched_repetitions = %d, but matrix %q runs %d repetition(s) of each cell: the rule could never match that many, and every comparison would be ineligible. Lower matched_repetitions to at most %d, or raise the matrix's repetitions.",
		d.MatchedRepetitions, m.Name, reps, reps)}
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}
