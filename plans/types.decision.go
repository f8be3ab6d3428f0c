package plans

import (
	"encoding/json"
	"regexp"
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
// block and averages over the matched repetitions.
var DecisionMetrics = map[string]bool{
	"aggregate_output_tok_s": true,  // Σ completion tokens / block wall time
	"decode_tok_s_p50":       true,  // block median of 1000 / capacity TPOT
	"ttft_ms_p50":            false, // block median of visible TTFT
	"tpot_ms_p50":            false, // block median of capacity TPOT
	"e2e_ms_p50":             false, // block median of E2E
}

// Decision is the pre-registered decision rule of a campaign: which cells decide,
// by how much the candidate must win there, and how much it may lose on the
// protected cells. It is part of the canonical plan (campaign.decision), so changing
// it after the freeze is an amendment.
//
//	decision "promotion" {
//	  primary_metric           = "aggregate_output_tok_s"
//	  primary_cells            = ["c4"]
//	  baseline_arm             = "incumbent_before"
//	  candidate_arm            = "candidate_1"
//	  protected_cells          = ["c1"]
//	  min_gain                 = 0.05
//	  max_protected_regression = 0.03
//	  matched_repetitions      = 3
//	}
//
// A cell selector is "cN": concurrency N of both arms.
type Decision struct {
	Name                   string
	PrimaryMetric          string
	PrimaryCells           []string
	BaselineArm            string
	CandidateArm           string
	ProtectedCells         []string
	MinGain                float64
	MaxProtectedRegression float64
	MatchedRepetitions     int
	DeclRange              hcl.Range
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
	d := &Decision{Name: b.Labels[0], DeclRange: b.DefRange, MatchedRepetitions: 1}
	content, diags := b.Body.Content(decisionSchema)
	diags = listValid(diags, "decision", schemaNames(decisionSchema))
	if content == nil || diags.HasErrors() {
		return nil, diags
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
		var out []string
		for _, e := range lv.AsValueSlice() {
			s := e.AsString()
			if !cellSelector.MatchString(s) {
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid cell selector",
					"%q is not a cell selector: use \"cN\" for concurrency N of both the baseline and the candidate arm.", s))
				continue
			}
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
			"%q is not a decision metric. Valid metrics: %s.", d.PrimaryMetric, strings.Join(names, ", ")))
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
	return map[string]any{
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
}
