package plans

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// DataRef says what a step argument names: a data block of Kind ("target",
// "workload", "gate" or "host"), or a list of them when List is set.
type DataRef struct {
	Kind string
	List bool
}

// DataReferrer is implemented by step types whose arguments name data blocks. Each
// such argument must hold one of those blocks: plan validate refuses a string
// (target = "incumbent") or a block of another kind (workload = target.candidate),
// which would otherwise fail only when the step runs.
type DataReferrer interface {
	DataReferences() map[string]DataRef
}

// checkDataReferences checks the arguments of every step that names data blocks,
// and a matrix's arm targets, workload (or its per-cell workloads) and gates, in the
// plan-time context.
func (p *Plan) checkDataReferences() hcl.Diagnostics {
	ctx := p.ev.planCtx
	var out distinctDiags
	add := out.add
	// A step's arguments that name data blocks are found once per step, then each
	// instance's are checked; both on every core, the diagnostics kept in run order.
	type stepArgs struct {
		s     *StepBlock
		refs  map[string]DataRef
		names []string // sorted
		attrs hcl.Attributes
		each  map[string]bool // the arguments that read each.key or each.value
	}
	type task struct {
		inst  *Instance
		args  *stepArgs
		first bool
	}
	var tasks []task
	var steps []*stepArgs
	byEntity := map[string]*stepArgs{}
	for _, inst := range p.Instances {
		s, ok := p.ev.entities[inst.entity].(*StepBlock)
		if !ok {
			continue
		}
		dr, ok := s.StepType.(DataReferrer)
		if !ok {
			continue
		}
		args, seen := byEntity[inst.entity]
		if !seen {
			args = &stepArgs{s: s, refs: dr.DataReferences()}
			byEntity[inst.entity] = args
			steps = append(steps, args)
		}
		tasks = append(tasks, task{inst: inst, args: args, first: !seen})
	}
	parallelFor(len(steps), 64, func(i int) {
		a := steps[i]
		a.names = sortedKeys(a.refs)
		a.attrs = hcl.Attributes{}
		a.each = map[string]bool{}
		// The arguments a step type reads are in the content its schema found.
		if a.s.content != nil {
			for _, n := range a.names {
				if attr := a.s.content.Attributes[n]; attr != nil {
					a.attrs[n] = attr
					a.each[n] = readsEach(attr.Expr)
				}
			}
		}
	})
	found := make([]hcl.Diagnostics, len(tasks))
	parallelFor(len(tasks), 64, func(i int) {
		inst, args, first := tasks[i].inst, tasks[i].args, tasks[i].first
		ictx := ctx
		if inst.Keyed && inst.each != cty.NilVal {
			ictx = withEach(ctx, inst.Key, inst.each)
		}
		for _, n := range args.names {
			a := args.attrs[n]
			// An argument that does not read each is the same in every instance.
			if a == nil || (!first && !args.each[n]) {
				continue
			}
			// The argument alone, not the instance's whole configuration: a data
			// reference is dynamically typed, so its value is the expression's.
			v, d := a.Expr.Value(ictx)
			if d.HasErrors() {
				continue // the configuration's evaluation reports it
			}
			found[i] = append(found[i], p.checkDataRef(n, args.refs[n], v, a.Expr, ctx)...)
		}
	})
	for _, d := range found {
		add(d...)
	}
	for _, m := range p.Matrices {
		for _, arm := range m.Arms {
			v, d := arm.Target.Value(ctx)
			if !d.HasErrors() {
				add(p.checkDataRef("target", DataRef{Kind: blockTarget}, v, arm.Target, ctx)...)
			}
		}
		if a := m.Attrs["workload"]; a != nil {
			if v, d := a.Expr.Value(ctx); !d.HasErrors() {
				if u, _ := v.Unmark(); isCellMap(u) {
					// One workload per cell: each entry is checked, at the key.
					for it := u.ElementIterator(); it.Next(); {
						k, w := it.Element()
						x := hcl.Expression(a.Expr)
						if e := objectValueExpr(a.Expr, k.AsString()); e != nil {
							x = e
						}
						add(p.checkDataRef("workload", DataRef{Kind: blockWorkload}, w, x, ctx)...)
					}
				} else {
					add(p.checkDataRef("workload", DataRef{Kind: blockWorkload}, v, a.Expr, ctx)...)
				}
			}
		}
		if a := m.Attrs["gates"]; a != nil {
			if v, d := a.Expr.Value(ctx); !d.HasErrors() {
				add(p.checkDataRef("gates", DataRef{Kind: blockGate, List: true}, v, a.Expr, ctx)...)
			}
		}
	}
	return out.diags
}

// readsEach says whether expr names each.key or each.value.
func readsEach(expr hcl.Expression) bool {
	for _, tr := range expr.Variables() {
		if tr.RootName() == "each" {
			return true
		}
	}
	return false
}

// objectValueExpr is the value expression of key in an object constructor, nil
// when expr is not one.
func objectValueExpr(expr hcl.Expression, key string) hcl.Expression {
	if item := objectItem(expr, key); item != nil {
		return item.ValueExpr
	}
	return nil
}

// checkDataRef checks that v, the value of argument name written as expr, is what
// ref says. A value not known at plan time is not checked.
func (p *Plan) checkDataRef(name string, ref DataRef, v cty.Value, expr hcl.Expression, ctx *hcl.EvalContext) hcl.Diagnostics {
	// The common case, a direct reference, is the block's own value, marks and
	// all: no copy is made to see that.
	if !ref.List && p.ev.isBlock(ctx, ref.Kind, v) {
		return nil
	}
	if lv, _ := v.Unmark(); ref.List && lv.IsKnown() && !lv.IsNull() && (lv.Type().IsListType() || lv.Type().IsTupleType()) {
		all := true
		for it := lv.ElementIterator(); it.Next() && all; {
			_, e := it.Element()
			all = p.ev.isBlock(ctx, ref.Kind, e)
		}
		if all {
			return nil
		}
	}
	u, pvm := v.UnmarkDeepWithPaths()
	if u.IsNull() || u.Type() == cty.DynamicPseudoType {
		return nil
	}
	secret := false
	for _, pm := range pvm {
		if _, ok := pm.Marks[Sensitive]; ok {
			secret = true
		}
	}
	if secret {
		// A diagnostic must not quote a secret: say what kind of value it is.
		u = cty.UnknownVal(u.Type())
		if !ref.List && !u.Type().IsObjectType() {
			return hcl.Diagnostics{errorAt(expr.Range(), "Incorrect attribute value type",
				"%s must be a %s reference such as %s.%s, not a sensitive %s.", name, ref.Kind, ref.Kind, p.exampleName(ref.Kind), u.Type().FriendlyName())}
		}
		return nil
	}
	if !ref.List {
		if d := p.checkOneRef(name, ref.Kind, u, expr.Range(), ctx); d != nil {
			return hcl.Diagnostics{d}
		}
		return nil
	}
	ty := u.Type()
	if !u.IsKnown() || !(ty.IsListType() || ty.IsTupleType() || ty.IsSetType()) {
		if u.IsKnown() {
			return hcl.Diagnostics{errorAt(expr.Range(), "Incorrect attribute value type",
				"%s must be a list of %s references such as [%s.%s], not %s.", name, ref.Kind, ref.Kind, p.exampleName(ref.Kind), describeValue(u))}
		}
		return nil
	}
	elems, _ := hcl.ExprList(expr)
	var diags hcl.Diagnostics
	i := 0
	for it := u.ElementIterator(); it.Next(); i++ {
		_, e := it.Element()
		rng := expr.Range()
		if len(elems) == u.LengthInt() {
			rng = elems[i].Range()
		}
		if d := p.checkOneRef(name, ref.Kind, e, rng, ctx); d != nil {
			diags = append(diags, d)
		}
	}
	return diags
}

// checkOneRef checks that u is the value of a declared block of kind: the block
// its name attribute names, unchanged. Blocks are compared by value, so a reference
// through a local or for_each is as good as a direct one.
func (p *Plan) checkOneRef(name, kind string, u cty.Value, rng hcl.Range, ctx *hcl.EvalContext) *hcl.Diagnostic {
	if !u.IsKnown() {
		return nil
	}
	if !u.Type().IsObjectType() || !u.Type().HasAttribute("name") {
		declared := p.ev.namesOf(kind)
		suggest := ""
		if u.Type() == cty.String && !u.IsNull() {
			if s := u.AsString(); contains(declared, s) {
				suggest = fmt.Sprintf(" Did you mean %s.%s?", kind, s)
			} else if m := didYouMean(s, declared); m != "" {
				suggest = m
			}
		}
		return errorAt(rng, "Incorrect attribute value type",
			"%s must be a %s reference such as %s.%s, not %s.%s", name, kind, kind, p.exampleName(kind), describeValue(u), suggest)
	}
	nv := u.GetAttr("name")
	if !nv.IsKnown() || nv.IsNull() || nv.Type() != cty.String {
		return nil
	}
	block := nv.AsString()
	if p.ev.sameBlock(ctx, kind, block, u) {
		return nil
	}
	for _, other := range []string{blockTarget, blockWorkload, blockGate, blockHost} {
		if other != kind && p.ev.sameBlock(ctx, other, block, u) {
			declared := p.ev.namesOf(kind)
			suggest := ""
			if contains(declared, block) {
				suggest = fmt.Sprintf(" Did you mean %s.%s?", kind, block)
			} else if m := didYouMean(block, declared); m != "" {
				suggest = m
			}
			return errorAt(rng, "Reference of the wrong kind",
				"%s names %s.%s, a %s block; it must name a %s block such as %s.%s.%s", name, other, block, other, kind, kind, p.exampleName(kind), suggest)
		}
	}
	return errorAt(rng, "Incorrect attribute value type",
		"%s must be a %s reference such as %s.%s; this object is not one of the campaign's %s blocks.", name, kind, kind, p.exampleName(kind), kind)
}

// isBlock says whether v is, marks and all, the value of the block of kind its
// name attribute names.
func (e *evaluator) isBlock(ctx *hcl.EvalContext, kind string, v cty.Value) bool {
	u, _ := v.Unmark()
	if !u.IsKnown() || u.IsNull() || !u.Type().IsObjectType() || !u.Type().HasAttribute("name") {
		return false
	}
	n, _ := u.GetAttr("name").Unmark()
	if !n.IsKnown() || n.IsNull() || n.Type() != cty.String {
		return false
	}
	return e.sameBlock(ctx, kind, n.AsString(), v)
}

// sameBlock says whether u is the value of block kind.name in ctx.
func (e *evaluator) sameBlock(ctx *hcl.EvalContext, kind, name string, u cty.Value) bool {
	all, ok := ctx.Variables[kind]
	if !ok || !all.Type().IsObjectType() || !all.Type().HasAttribute(name) {
		return false
	}
	return sameValue(all.GetAttr(name), u)
}

// sameValue is cty's RawEquals without marks and with numbers compared as numbers:
// RawEquals prints both numbers of a pair as decimal text, which made comparing a
// campaign's targets a tenth of its validation.
func sameValue(a, b cty.Value) bool {
	a, _ = a.Unmark()
	b, _ = b.Unmark()
	if !a.Type().Equals(b.Type()) || a.IsKnown() != b.IsKnown() || a.IsNull() != b.IsNull() {
		return false
	}
	if !a.IsKnown() || a.IsNull() {
		return true
	}
	ty := a.Type()
	switch {
	case ty == cty.String:
		return a.AsString() == b.AsString()
	case ty == cty.Bool:
		return a.True() == b.True()
	case ty == cty.Number:
		return a.AsBigFloat().Cmp(b.AsBigFloat()) == 0
	case ty.IsObjectType() || ty.IsTupleType() || ty.IsListType() || ty.IsMapType() || ty.IsSetType():
		if a.LengthInt() != b.LengthInt() {
			return false
		}
		ia, ib := a.ElementIterator(), b.ElementIterator()
		for ia.Next() && ib.Next() {
			ka, ea := ia.Element()
			kb, eb := ib.Element()
			if !sameValue(ka, kb) || !sameValue(ea, eb) {
				return false
			}
		}
		return true
	}
	return a.RawEquals(b)
}

// exampleName is a declared block name of kind for an example, else "NAME".
func (p *Plan) exampleName(kind string) string {
	if names := p.ev.namesOf(kind); len(names) > 0 {
		return names[0]
	}
	return "NAME"
}

// describeValue names a value's type for a diagnostic, quoting a string.
func describeValue(u cty.Value) string {
	if u.Type() == cty.String && !u.IsNull() {
		return fmt.Sprintf("the string %q", u.AsString())
	}
	return article(u.Type().FriendlyName()) + " " + u.Type().FriendlyName()
}
