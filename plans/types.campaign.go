package plans

import (
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Campaign is the campaign block: its name, the outage budget and the frozen files.
type Campaign struct {
	Name        string
	Description string
	// Frozen lists files (relative to the campaign directory) hashed when the plan is
	// frozen and re-checked before every step that names them.
	Frozen    []string
	Outage    *Outage
	DeclRange hcl.Range
}

// Outage bounds how long the incumbent may be out of service. Budget and reserve
// are durations known at plan time: literals, or expressions of variables and
// locals, evaluated once those have their values (Plan.evalOutage).
type Outage struct {
	Budget  time.Duration
	Reserve time.Duration
	Range   hcl.Range

	budget, reserve *hcl.Attribute
}

var campaignSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "description"}, {Name: "frozen"}},
	Blocks:     []hcl.BlockHeaderSchema{{Type: "outage"}},
}

var outageSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "budget", Required: true}, {Name: "reserve", Required: true}},
}

func decodeCampaign(b *hcl.Block) (Campaign, hcl.Diagnostics) {
	c := Campaign{Name: b.Labels[0], DeclRange: b.DefRange}
	content, diags := b.Body.Content(campaignSchema)
	diags = listValid(diags, "campaign", schemaNames(campaignSchema))
	if content == nil {
		return c, diags
	}
	if a, ok := content.Attributes["description"]; ok {
		var d hcl.Diagnostics
		c.Description, d = staticString(a)
		diags = append(diags, d...)
	}
	if a, ok := content.Attributes["frozen"]; ok {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if !d.HasErrors() {
			lv, err := convert.Convert(v, cty.List(cty.String))
			if err != nil || lv.IsNull() {
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid frozen list", "frozen must be a list of file paths."))
			} else {
				for _, e := range lv.AsValueSlice() {
					c.Frozen = append(c.Frozen, e.AsString())
				}
			}
		}
	}
	for i, ob := range content.Blocks {
		if i > 0 {
			diags = append(diags, errorAt(ob.DefRange, "Duplicate outage block", "A campaign has at most one outage block."))
			continue
		}
		oc, od := ob.Body.Content(outageSchema)
		diags = append(diags, listValid(od, "outage", schemaNames(outageSchema))...)
		if oc == nil || oc.Attributes["budget"] == nil || oc.Attributes["reserve"] == nil {
			continue // a missing budget or reserve is od's diagnostic
		}
		o := &Outage{Range: ob.DefRange, budget: oc.Attributes["budget"], reserve: oc.Attributes["reserve"]}
		// Literals are read now; expressions of variables and locals once those
		// have values (Plan.evalOutage).
		if len(o.budget.Expr.Variables()) == 0 && len(o.reserve.Expr.Variables()) == 0 {
			diags = append(diags, o.eval(nil)...)
		}
		c.Outage = o
	}
	return c, diags
}

// eval reads budget and reserve in ctx (nil for literals) and checks that the
// reserve fits in the budget.
func (o *Outage) eval(ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	dur := func(a *hcl.Attribute) time.Duration {
		v, d := a.Expr.Value(ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return 0
		}
		v, _ = v.UnmarkDeep()
		if !v.IsWhollyKnown() {
			diags = append(diags, errorAt(a.Expr.Range(), "Value must be known at plan time",
				"The outage %s bounds the whole campaign, so it must be known before anything runs: a literal, a variable or a local, never a step's output.", a.Name))
			return 0
		}
		sv, err := convert.Convert(v, cty.String)
		if err != nil || sv.IsNull() {
			diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a duration such as \"90m\".", a.Name))
			return 0
		}
		t, err := ParseDuration(sv.AsString())
		if err != nil {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid duration", "%s: %s.", a.Name, err))
		}
		return t
	}
	o.Budget, o.Reserve = dur(o.budget), dur(o.reserve)
	if !diags.HasErrors() && o.Reserve >= o.Budget {
		diags = append(diags, errorAt(o.reserve.Expr.Range(), "Outage reserve exceeds budget",
			"The reserve (%s) must be smaller than the budget (%s): it is the part of the budget kept for restore.", o.Reserve, o.Budget))
	}
	return diags
}

// evalOutage reads an outage written with variables or locals, in the plan-time
// context.
func (p *Plan) evalOutage(ctx *hcl.EvalContext) hcl.Diagnostics {
	o := p.Campaign.Outage
	if o == nil || (len(o.budget.Expr.Variables()) == 0 && len(o.reserve.Expr.Variables()) == 0) {
		return nil
	}
	// Resolve the references first, so a misspelt variable or local is named
	// with a suggestion.
	if _, d := p.ev.exprRefs(false, o.budget.Expr, o.reserve.Expr); d.HasErrors() {
		return d
	}
	return o.eval(ctx)
}

func staticString(a *hcl.Attribute) (string, hcl.Diagnostics) {
	if a == nil {
		return "", nil
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() {
		return "", diags
	}
	sv, err := convert.Convert(v, cty.String)
	if err != nil || sv.IsNull() || !sv.IsKnown() {
		return "", append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a string.", a.Name))
	}
	return sv.AsString(), diags
}
