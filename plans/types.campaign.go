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

// Outage bounds how long the incumbent may be out of service.
type Outage struct {
	Budget  time.Duration
	Reserve time.Duration
	Range   hcl.Range
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
		if oc == nil {
			continue
		}
		o := &Outage{Range: ob.DefRange}
		var d hcl.Diagnostics
		o.Budget, d = staticDuration(oc.Attributes["budget"])
		diags = append(diags, d...)
		o.Reserve, d = staticDuration(oc.Attributes["reserve"])
		diags = append(diags, d...)
		if !diags.HasErrors() && o.Reserve >= o.Budget {
			diags = append(diags, errorAt(oc.Attributes["reserve"].Expr.Range(), "Outage reserve exceeds budget",
				"The reserve (%s) must be smaller than the budget (%s): it is the part of the budget kept for restore.", o.Reserve, o.Budget))
		}
		c.Outage = o
	}
	return c, diags
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

func staticDuration(a *hcl.Attribute) (time.Duration, hcl.Diagnostics) {
	if a == nil {
		return 0, nil
	}
	s, diags := staticString(a)
	if diags.HasErrors() {
		return 0, diags
	}
	d, err := ParseDuration(s)
	if err != nil {
		return 0, append(diags, errorAt(a.Expr.Range(), "Invalid duration", "%s: %s.", a.Name, err))
	}
	return d, diags
}
