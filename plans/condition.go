package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// checkConditions evaluates every condition at validate time, each outcome it names
// an unknown value of its type: a field that no outcome has, and a condition that is
// not true or false (a string, a number), are refused here rather than when the step
// could start, possibly inside the outage.
func (p *Plan) checkConditions() hcl.Diagnostics {
	// Built at the first condition: a plan without one pays nothing for it.
	var ctx *hcl.EvalContext
	var out distinctDiags
	add := out.add
	checked := map[string]bool{}
	for _, inst := range p.Instances {
		expr := inst.Meta.Condition
		if expr == nil {
			continue
		}
		// A condition without each reads the same for every instance.
		if inst.each == cty.NilVal {
			if checked[inst.entity] {
				continue
			}
			checked[inst.entity] = true
		}
		if fd := p.checkOutcomeFields(expr); len(fd) > 0 {
			add(fd...)
			continue
		}
		if ctx == nil {
			ctx = p.unknownOutcomes()
		}
		ictx := ctx
		if inst.each != cty.NilVal {
			ictx = withEach(ctx, inst.Key, inst.each)
		}
		v, d := expr.Value(ictx)
		if d.HasErrors() {
			add(d...)
			continue
		}
		if u, _ := v.UnmarkDeep(); u.Type() != cty.Bool && u.Type() != cty.DynamicPseudoType {
			add(errorAt(expr.Range(), "Invalid condition",
				"A condition must be true or false, and this one is %s%s. Compare outcome fields, e.g. condition = outcome.block.pilot.status == \"succeeded\" or outcome.arm.primary.incumbent.clean.",
				article(u.Type().FriendlyName()), " "+u.Type().FriendlyName()))
		}
	}
	return out.diags
}

// unknownOutcomes is the plan-time context with outcome.* in scope, every outcome
// unknown: what a condition reads, typed, before anything has run.
func (p *Plan) unknownOutcomes() *hcl.EvalContext {
	return p.outcomeContext(p.ev.planCtx,
		func(*Instance) cty.Value { return cty.UnknownVal(OutcomeType) },
		func(string, string) cty.Value { return cty.UnknownVal(ArmOutcomeType) })
}

// checkOutcomeFields refuses a field that no outcome has (outcome.exec.y.statuss),
// naming the fields there are and the closest one. References were resolved, so
// the step, matrix or arm an outcome names exists.
func (p *Plan) checkOutcomeFields(expr hcl.Expression) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		if tr.RootName() != "outcome" || len(tr) < 3 {
			continue
		}
		first, _ := tr[1].(hcl.TraverseAttr)
		second, _ := tr[2].(hcl.TraverseAttr)
		at, fields, what := 3, OutcomeType, "outcome."+first.Name+"."+second.Name
		if first.Name == "arm" {
			third, _ := tr[3].(hcl.TraverseAttr)
			at, fields, what = 4, ArmOutcomeType, what+"."+third.Name
		} else if p.keyedEntity("step." + first.Name + "." + second.Name) {
			// outcome.TYPE.NAME[KEY].FIELD: a keyed step's outcomes are by key.
			if len(tr) <= 3 {
				continue
			}
			ix, ok := tr[3].(hcl.TraverseIndex)
			if !ok {
				continue
			}
			if ix.Key.Type() == cty.String && ix.Key.IsKnown() {
				what += fmt.Sprintf("[%q]", ix.Key.AsString())
			}
			at = 4
		}
		if len(tr) <= at {
			continue
		}
		field, ok := tr[at].(hcl.TraverseAttr)
		if !ok {
			continue
		}
		names := make([]string, 0, len(fields.AttributeTypes()))
		for n := range fields.AttributeTypes() {
			names = append(names, n)
		}
		sort.Strings(names)
		if fields.HasAttribute(field.Name) {
			continue
		}
		diags = append(diags, errorAt(field.SrcRange, "Unknown outcome field",
			"%s has no field %q.%s Its fields: %s.", what, field.Name, didYouMean(field.Name, names), strings.Join(names, ", ")))
	}
	return diags
}

// keyedEntity says whether the step or matrix id has instances by key.
func (p *Plan) keyedEntity(id string) bool {
	switch x := p.ev.entities[id].(type) {
	case *Matrix:
		return true
	case *StepBlock:
		return x.Keyed()
	}
	return false
}
