package plans

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// ref is one reference found in an expression.
type ref struct {
	Entity string  // var.x, target.x, step.block.pilot, ...
	Key    *string // instance key when the reference indexes a keyed step
	Range  hcl.Range
	// After marks a reference to a step's outcome (outcome.TYPE.NAME): it orders the
	// referrer after the step, whatever its outcome, rather than needing its outputs.
	After bool
	// Arm narrows an outcome.arm.MATRIX.ARM reference to one arm's instances.
	Arm string
	// Static marks a depends_on entry: it orders the referrer after the step, and
	// nothing evaluates it.
	Static bool
}

var refRoots = []string{"var", "local", "host", "target", "workload", "gate", "step", "each", "outcome"}

// resolve turns a traversal into a reference, checking that what it names exists.
func (e *evaluator) resolve(tr hcl.Traversal, allowEach bool) (ref, *hcl.Diagnostic) {
	rng := tr.SourceRange()
	root := tr.RootName()
	attrAt := func(i int) (string, bool) {
		if len(tr) <= i {
			return "", false
		}
		a, ok := tr[i].(hcl.TraverseAttr)
		return a.Name, ok
	}
	switch root {
	case "each":
		if !allowEach {
			return ref{}, errorAt(rng, "Reference to \"each\" in context without for_each", "each.key and each.value exist only inside a step with for_each or count.")
		}
		return ref{Entity: "each", Range: rng}, nil
	case "var", "local", "host", "target", "workload", "gate":
		name, ok := attrAt(1)
		if !ok {
			return ref{}, errorAt(rng, "Invalid reference", "A reference to a %s needs a name, such as %s.NAME.", root, root)
		}
		id := root + "." + name
		if _, ok := e.entities[id]; !ok {
			return ref{}, errorAt(rng, "Reference to undeclared "+kindWord(root),
				"There is no %s named %q.%s", kindWord(root), name, didYouMean(name, e.namesOf(root)))
		}
		return ref{Entity: id, Range: rng}, nil
	case "step":
		typ, ok1 := attrAt(1)
		name, ok2 := attrAt(2)
		if !ok1 || !ok2 {
			return ref{}, errorAt(rng, "Invalid reference", "A reference to a step has the form step.TYPE.NAME.")
		}
		id := "step." + typ + "." + name
		if _, ok := e.entities[id]; !ok {
			return ref{}, errorAt(rng, "Reference to undeclared step",
				"There is no step %s.%s.%s", typ, name, didYouMean(typ+"."+name, e.namesOf("step")))
		}
		r := ref{Entity: id, Range: rng}
		if len(tr) > 3 {
			if ix, ok := tr[3].(hcl.TraverseIndex); ok && ix.Key.Type() == cty.String && ix.Key.IsKnown() {
				k := ix.Key.AsString()
				r.Key = &k
			}
		}
		return r, nil
	case "outcome":
		return e.resolveOutcome(tr)
	default:
		return ref{}, errorAt(rng, "Unknown reference",
			"%q is not something a campaign can refer to. References start with %s.%s", root, joinQuoted(refRoots), didYouMean(root, refRoots))
	}
}

// resolveOutcome resolves outcome.TYPE.NAME[KEY] (the outcome of a step or of one
// of its instances) and outcome.arm.MATRIX.ARM (the outcome of a matrix arm).
func (e *evaluator) resolveOutcome(tr hcl.Traversal) (ref, *hcl.Diagnostic) {
	rng := tr.SourceRange()
	attrAt := func(i int) (string, bool) {
		if len(tr) <= i {
			return "", false
		}
		a, ok := tr[i].(hcl.TraverseAttr)
		return a.Name, ok
	}
	first, ok1 := attrAt(1)
	second, ok2 := attrAt(2)
	if !ok1 || !ok2 {
		return ref{}, errorAt(rng, "Invalid reference", "An outcome reference has the form outcome.TYPE.NAME (a step) or outcome.arm.MATRIX.ARM (a matrix arm).")
	}
	if first == "arm" {
		armName, ok := attrAt(3)
		m, isMatrix := e.entities["step.block."+second].(*Matrix)
		if !isMatrix {
			return ref{}, errorAt(rng, "Reference to undeclared matrix", "There is no matrix %q.%s", second, didYouMean(second, e.matrixNames()))
		}
		if !ok {
			return ref{}, errorAt(rng, "Invalid reference", "outcome.arm.%s needs an arm: outcome.arm.%s.ARM.", second, second)
		}
		var arms []string
		for _, a := range m.Arms {
			arms = append(arms, a.Name)
		}
		if !contains(arms, armName) {
			return ref{}, errorAt(rng, "Reference to undeclared arm", "Matrix %q has no arm %q.%s Its arms: %s.", second, armName, didYouMean(armName, arms), strings.Join(arms, ", "))
		}
		return ref{Entity: m.ID(), Range: rng, After: true, Arm: armName}, nil
	}
	id := "step." + first + "." + second
	if _, ok := e.entities[id]; !ok {
		return ref{}, errorAt(rng, "Reference to undeclared step",
			"There is no step %s.%s whose outcome could be read.%s", first, second, didYouMean(first+"."+second, e.namesOf("step")))
	}
	r := ref{Entity: id, Range: rng, After: true}
	if len(tr) > 3 {
		if ix, ok := tr[3].(hcl.TraverseIndex); ok && ix.Key.Type() == cty.String && ix.Key.IsKnown() {
			k := ix.Key.AsString()
			r.Key = &k
		}
	}
	return r, nil
}

func (e *evaluator) matrixNames() []string {
	var out []string
	for _, m := range e.plan.Matrices {
		out = append(out, m.Name)
	}
	return out
}

func kindWord(root string) string {
	switch root {
	case "var":
		return "variable"
	case "local":
		return "local value"
	}
	return root
}

func joinQuoted(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n + "."
	}
	return s
}

func (e *evaluator) namesOf(root string) []string {
	var out []string
	for id := range e.entities {
		if len(id) > len(root)+1 && id[:len(root)+1] == root+"." {
			out = append(out, id[len(root)+1:])
		}
	}
	sort.Strings(out)
	return out
}

// exprRefs resolves every traversal of the given expressions.
func (e *evaluator) exprRefs(allowEach bool, exprs ...hcl.Expression) ([]ref, hcl.Diagnostics) {
	var trs []hcl.Traversal
	for _, x := range exprs {
		if x != nil {
			trs = append(trs, x.Variables()...)
		}
	}
	return e.traversalRefs(trs, allowEach)
}

func (e *evaluator) traversalRefs(trs []hcl.Traversal, allowEach bool) ([]ref, hcl.Diagnostics) {
	var out []ref
	var diags hcl.Diagnostics
	for _, tr := range trs {
		r, d := e.resolve(tr, allowEach)
		if d != nil {
			diags = append(diags, d)
			continue
		}
		out = append(out, r)
	}
	return out, diags
}

// entityRefs collects the references of one declared object. An outcome reference
// (outcome.*) is allowed in a condition only: elsewhere a value would depend on
// whether a step failed.
func (e *evaluator) entityRefs(id string) ([]ref, hcl.Diagnostics) {
	refs, diags, condition := e.collectRefs(id)
	for i, r := range refs {
		if r.After && !condition[i] {
			diags = append(diags, errorAt(r.Range, "Outcome outside a condition",
				"outcome.* names how a step ended; only a step's or a matrix's condition may read it."))
		}
	}
	return refs, diags
}

// collectRefs lists the references of one declared object and marks those that come
// from its condition.
func (e *evaluator) collectRefs(id string) ([]ref, hcl.Diagnostics, map[int]bool) {
	condition := map[int]bool{}
	switch x := e.entities[id].(type) {
	case *Local:
		r, d := e.exprRefs(false, x.Expr)
		return r, d, condition
	case *DataBlock:
		var exprs []hcl.Expression
		for _, name := range sortedAttrNames(x.Attrs) {
			exprs = append(exprs, x.Attrs[name].Expr)
		}
		r, d := e.exprRefs(false, exprs...)
		return r, d, condition
	case *StepBlock:
		var diags hcl.Diagnostics
		var refs []ref
		var exprs []hcl.Expression
		for _, name := range sortedAttrNames(x.MetaAttrs) {
			switch name {
			case metaDependsOn:
				trs, d := staticTraversals(x.MetaAttrs[name])
				diags = append(diags, d...)
				r, d := e.traversalRefs(trs, false)
				diags = append(diags, d...)
				for i := range r {
					r[i].Static = true
				}
				refs = append(refs, r...)
			case metaForEach:
				r, d := e.exprRefs(false, x.MetaAttrs[name].Expr)
				diags = append(diags, d...)
				refs = append(refs, r...)
			case metaDuring:
				// A relation, not a dependency: resolved once every instance exists
				// (resolveDuring).
			case metaCondition:
				r, d := e.exprRefs(x.Keyed(), x.MetaAttrs[name].Expr)
				diags = append(diags, d...)
				for _, one := range r {
					condition[len(refs)] = true
					refs = append(refs, one)
				}
			default:
				exprs = append(exprs, x.MetaAttrs[name].Expr)
			}
		}
		r, d := e.exprRefs(x.Keyed(), exprs...)
		diags = append(diags, d...)
		refs = append(refs, r...)
		r, d = e.traversalRefs(hcldec.Variables(x.Body, x.StepType.Spec()), x.Keyed())
		diags = append(diags, d...)
		return append(refs, r...), diags, condition
	case *Matrix:
		var refs []ref
		var diags hcl.Diagnostics
		for _, name := range sortedAttrNames(x.Attrs) {
			r, d := e.exprRefs(false, x.Attrs[name].Expr)
			diags = append(diags, d...)
			for _, one := range r {
				if name == metaCondition {
					condition[len(refs)] = true
				}
				refs = append(refs, one)
			}
		}
		var exprs []hcl.Expression
		for _, a := range x.Arms {
			exprs = append(exprs, a.Target)
			if a.ResetCache != nil {
				exprs = append(exprs, a.ResetCache.Expr)
			}
		}
		r, d := e.exprRefs(false, exprs...)
		return append(refs, r...), append(diags, d...), condition
	}
	return nil, nil, condition
}

func sortedAttrNames(attrs hcl.Attributes) []string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func describeRef(r ref) string {
	return fmt.Sprintf("%s (at %s)", r.Entity, r.Range)
}
