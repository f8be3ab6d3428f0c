package plans

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dominikbraun/graph"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// evaluator holds what evaluation needs: the declared objects by reference name,
// their references, an evaluation order for data blocks, and the function table.
type evaluator struct {
	plan      *Plan
	funcs     map[string]function.Function
	entities  map[string]any // var.x -> *Variable, local.x -> *Local, target.x -> *DataBlock, step.t.n -> *StepBlock | *Matrix
	refs      map[string][]ref
	dataOrder []valueNode // topological: a target comes after the host and the locals it names
	vars      cty.Value
	// stepDeps lists, per data block, the step entities it depends on transitively,
	// so a step that names a target waits for the build the target's image comes from.
	stepDeps map[string][]ref
	// planCtx is the plan-time context (no step has run) the instances were
	// evaluated in; checks after expansion evaluate in it too.
	planCtx *hcl.EvalContext
	// vocab is what the step types know of the values data blocks hold.
	vocab *Vocabulary
	// noSteps makes the context without steps once (context).
	noSteps      sync.Once
	noStepsCtx   *hcl.EvalContext
	noStepsDiags hcl.Diagnostics
	// plain holds every data block's and local's value in the context without
	// steps. A context with step outputs shares those of the blocks and locals not
	// in again, so the engine's context before each step evaluates only what can
	// have changed since the plan was loaded.
	plain map[string]valueEval
	// stepsRead are the steps and matrices an expression reads the outputs of:
	// the "step" namespace holds only theirs. In a campaign of 119,000 instances,
	// a few thousand are read (pilots, freezes, builds); a marked unknown for each
	// of the others was most of what a context cost.
	stepsRead map[string]bool
	// outcomesRead are the steps and matrices a condition reads the outcome of
	// (outcome.TYPE.NAME): the "outcome" namespace holds only theirs.
	outcomesRead map[string]bool
	// again lists the data blocks and locals a context with steps evaluates anew: a
	// step feeds them, or they read a file (fileReaders), which a step may have
	// written; directly or through the blocks and locals they name.
	again map[string]bool
}

// valueEval is a data block's or local's value and what evaluating it reported.
type valueEval struct {
	v     cty.Value
	diags hcl.Diagnostics
}

func newEvaluator(p *Plan, types StepTypes) (*evaluator, hcl.Diagnostics) {
	e := &evaluator{
		plan:     p,
		funcs:    functions(p.BaseDir),
		entities: map[string]any{},
		refs:     map[string][]ref{},
		stepDeps: map[string][]ref{},
		again:    map[string]bool{},
		vocab:    vocabularyOf(types),
	}
	var diags hcl.Diagnostics
	varVals := map[string]cty.Value{}
	for _, v := range p.Variables {
		e.entities["var."+v.Name] = v
		varVals[v.Name] = v.Value
	}
	e.vars = cty.ObjectVal(varVals)
	for _, d := range p.Data {
		e.entities[d.ID()] = d
	}
	for _, l := range p.Locals {
		e.entities[l.ID()] = l
	}
	for _, s := range p.Steps {
		e.entities[s.ID()] = s
	}
	for _, m := range p.Matrices {
		e.entities[m.ID()] = m
	}
	ids := make([]string, 0, len(e.entities))
	for id := range e.entities {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Collecting references only reads the declarations, so it runs on every core.
	refs := make([][]ref, len(ids))
	refDiags := make([]hcl.Diagnostics, len(ids))
	parallelFor(len(ids), 64, func(i int) { refs[i], refDiags[i] = e.entityRefs(ids[i]) })
	for i, id := range ids {
		diags = append(diags, refDiags[i]...)
		e.refs[id] = refs[i]
	}
	if diags.HasErrors() {
		return nil, diags
	}
	e.stepsRead, e.outcomesRead = map[string]bool{}, map[string]bool{}
	for _, rs := range e.refs {
		for _, r := range rs {
			switch {
			case r.Static || !strings.HasPrefix(r.Entity, "step."):
			case r.After && r.Arm != "":
				// An arm's outcome is in the arm namespace, which holds every arm.
			case r.After:
				e.outcomesRead[r.Entity] = true
			default:
				e.stepsRead[r.Entity] = true
			}
		}
	}
	diags = append(diags, e.checkCycles(ids)...)
	if diags.HasErrors() {
		return nil, diags
	}
	e.orderData()
	return e, diags
}

// checkCycles adds every reference as an edge to a graph that refuses cycles, and
// turns a refused edge into a diagnostic that shows each reference of the cycle.
func (e *evaluator) checkCycles(ids []string) hcl.Diagnostics {
	// PreventCycles searches the graph on every edge it adds, which is quadratic
	// along a chain of steps declared last-first (20,000 of them took 100 s). Only
	// the entities a linear pass cannot order can be on a cycle, so only their
	// edges go through it; an acyclic campaign never does.
	onCycle := e.unordered(ids)
	if len(onCycle) == 0 {
		return nil
	}
	var diags hcl.Diagnostics
	g := graph.New(graph.StringHash, graph.Directed(), graph.PreventCycles())
	for _, id := range ids {
		_ = g.AddVertex(id)
	}
	edgeRange := map[[2]string]hcl.Range{}
	for _, id := range ids {
		if !onCycle[id] {
			continue
		}
		for _, r := range e.refs[id] {
			if r.Entity == "each" || strings.HasPrefix(r.Entity, "var.") || !onCycle[r.Entity] {
				continue
			}
			key := [2]string{id, r.Entity}
			if _, dup := edgeRange[key]; dup {
				continue
			}
			edgeRange[key] = r.Range
			err := g.AddEdge(id, r.Entity)
			if err == nil || errors.Is(err, graph.ErrEdgeAlreadyExists) {
				continue
			}
			if !errors.Is(err, graph.ErrEdgeCreatesCycle) {
				diags = append(diags, errorAt(r.Range, "Cannot add dependency", "%s", err))
				continue
			}
			var chain []string
			chain = append(chain, fmt.Sprintf("%s refers to %s at %s", id, r.Entity, r.Range))
			if r.Entity != id {
				path, perr := graph.ShortestPath(g, r.Entity, id)
				if perr == nil {
					for i := 0; i+1 < len(path); i++ {
						chain = append(chain, fmt.Sprintf("%s refers to %s at %s", path[i], path[i+1], edgeRange[[2]string{path[i], path[i+1]}]))
					}
				}
			}
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Dependency cycle",
				Detail:   "These references form a cycle, so no order can satisfy them:\n  " + strings.Join(chain, "\n  "),
				Subject:  r.Range.Ptr(),
			})
		}
	}
	return diags
}

// unordered runs Kahn's algorithm over the references and returns the entities it
// cannot order: those on a cycle and those that refer to one.
func (e *evaluator) unordered(ids []string) map[string]bool {
	pending := map[string]int{} // references not yet satisfied
	referrers := map[string][]string{}
	for _, id := range ids {
		seen := map[string]bool{}
		for _, r := range e.refs[id] {
			if r.Entity == "each" || strings.HasPrefix(r.Entity, "var.") || seen[r.Entity] {
				continue
			}
			seen[r.Entity] = true
			pending[id]++
			referrers[r.Entity] = append(referrers[r.Entity], id)
		}
	}
	var ready []string
	for _, id := range ids {
		if pending[id] == 0 {
			ready = append(ready, id)
		}
	}
	for len(ready) > 0 {
		id := ready[len(ready)-1]
		ready = ready[:len(ready)-1]
		for _, x := range referrers[id] {
			if pending[x]--; pending[x] == 0 {
				ready = append(ready, x)
			}
		}
	}
	left := map[string]bool{}
	for _, id := range ids {
		if pending[id] > 0 {
			left[id] = true
		}
	}
	return left
}

// valueNode is a value computed from the plan alone, before any step: a data block
// (host, target, workload, gate) or a local value.
type valueNode interface{ ID() string }

// orderData orders data blocks and locals so each comes after the ones it names,
// keeping declaration order otherwise (data blocks first), and records each one's
// transitive step dependencies.
func (e *evaluator) orderData() {
	done := map[string]bool{}
	var visit func(n valueNode)
	visit = func(n valueNode) {
		if done[n.ID()] {
			return
		}
		done[n.ID()] = true
		var steps []ref
		again := readsFiles(n)
		for _, r := range e.refs[n.ID()] {
			switch x := e.entities[r.Entity].(type) {
			case *DataBlock:
				visit(x)
				steps = append(steps, e.stepDeps[x.ID()]...)
				again = again || e.again[x.ID()]
			case *Local:
				visit(x)
				steps = append(steps, e.stepDeps[x.ID()]...)
				again = again || e.again[x.ID()]
			case *StepBlock, *Matrix:
				steps = append(steps, r)
			}
		}
		e.stepDeps[n.ID()] = steps
		e.again[n.ID()] = again || len(steps) > 0
		e.dataOrder = append(e.dataOrder, n)
	}
	for _, d := range e.plan.Data {
		visit(d)
	}
	for _, l := range e.plan.Locals {
		visit(l)
	}
}

// Outputs maps instance addresses to the outputs of steps that have run.
type Outputs map[string]cty.Value

// Context builds the evaluation context for the given step outputs. The step
// namespace holds the steps some expression reads (stepsRead); one that has not
// produced outputs yet appears as an unknown marked with its address.
func (p *Plan) Context(outputs Outputs) (*hcl.EvalContext, hcl.Diagnostics) {
	return p.ev.context(outputs, true)
}

func (e *evaluator) context(outputs Outputs, withSteps bool) (*hcl.EvalContext, hcl.Diagnostics) {
	if withSteps {
		ctx, diags, _ := e.buildContext(outputs, true)
		return ctx, diags
	}
	// The context without steps depends on nothing that changes after the
	// evaluator is made; checking data values and expansion both use it, and
	// building it evaluates every data block.
	e.noSteps.Do(func() { e.noStepsCtx, e.noStepsDiags, e.plain = e.buildContext(nil, false) })
	return e.noStepsCtx, e.noStepsDiags
}

// readsFiles says whether a data block's or local's expressions call a function
// that reads a file.
func readsFiles(n valueNode) bool {
	var exprs []hcl.Expression
	switch x := n.(type) {
	case *Local:
		exprs = append(exprs, x.Expr)
	case *DataBlock:
		for _, a := range x.Attrs {
			exprs = append(exprs, a.Expr)
		}
	}
	found := false
	for _, x := range exprs {
		if sx, ok := x.(hclsyntax.Expression); ok {
			hclsyntax.VisitAll(sx, func(node hclsyntax.Node) hcl.Diagnostics {
				if call, ok := node.(*hclsyntax.FunctionCallExpr); ok && slices.Contains(fileReaders, call.Name) {
					found = true
				}
				return nil
			})
		}
	}
	return found
}

// buildContext makes a context and returns, with it, the value of each data block
// and local it evaluated. With steps, it evaluates only those in e.again and takes
// the others from the context without steps, which it makes first.
func (e *evaluator) buildContext(outputs Outputs, withSteps bool) (*hcl.EvalContext, hcl.Diagnostics, map[string]valueEval) {
	// outcome.* is known only when the engine evaluates a condition.
	base := map[string]cty.Value{"var": e.vars, "step": cty.DynamicVal, "outcome": cty.DynamicVal}
	if withSteps {
		base["step"] = e.stepObject(outputs)
		e.context(nil, false)
	}
	var diags hcl.Diagnostics
	evaluated := map[string]valueEval{}
	values := make(map[string]cty.Value, len(e.dataOrder))
	changed := map[string]bool{} // kinds with a value evaluated anew
	// Each data block or local is evaluated in a context holding only the data
	// blocks and locals it names (references were resolved, so nothing else can be
	// reached): publishing the whole namespace again after every block made
	// evaluation quadratic in the number of blocks.
	for _, n := range e.dataOrder {
		if withSteps && !e.again[n.ID()] {
			ve := e.plain[n.ID()]
			values[n.ID()] = ve.v
			diags = append(diags, ve.diags...)
			continue
		}
		seen := map[string]map[string]cty.Value{}
		for _, r := range e.refs[n.ID()] {
			if kind, name, ok := valueName(e.entities[r.Entity]); ok {
				if seen[kind] == nil {
					seen[kind] = map[string]cty.Value{}
				}
				seen[kind][name] = values[r.Entity]
			}
		}
		ctx := &hcl.EvalContext{Variables: namespaces(base, seen, nil), Functions: e.funcs}
		var ve valueEval
		switch x := n.(type) {
		case *Local:
			ve.v, ve.diags = x.Expr.Value(ctx)
			if ve.diags.HasErrors() {
				ve.v = cty.DynamicVal
			}
		case *DataBlock:
			attrs := map[string]cty.Value{"name": cty.StringVal(x.Name)}
			for _, name := range sortedAttrNames(x.Attrs) {
				v, vd := x.Attrs[name].Expr.Value(ctx)
				ve.diags = append(ve.diags, vd...)
				if vd.HasErrors() {
					v = cty.DynamicVal
				}
				attrs[name] = v
			}
			ve.v = cty.ObjectVal(attrs)
		}
		diags = append(diags, ve.diags...)
		values[n.ID()] = ve.v
		evaluated[n.ID()] = ve
		kind, _, _ := valueName(n)
		changed[kind] = true
	}
	all := map[string]map[string]cty.Value{}
	for _, n := range e.dataOrder {
		kind, name, _ := valueName(n)
		if all[kind] == nil {
			all[kind] = map[string]cty.Value{}
		}
		all[kind][name] = values[n.ID()]
	}
	// A kind none of whose values changed is the context without steps' own object.
	var same map[string]cty.Value
	if withSteps {
		same = map[string]cty.Value{}
		for kind, v := range e.noStepsCtx.Variables {
			if !changed[kind] {
				same[kind] = v
			}
		}
	}
	return &hcl.EvalContext{Variables: namespaces(base, all, same), Functions: e.funcs}, diags, evaluated
}

// valueName is the namespace and name a data block or local is referred to by.
func valueName(x any) (kind, name string, ok bool) {
	switch x := x.(type) {
	case *DataBlock:
		return x.Kind, x.Name, true
	case *Local:
		return blockLocal, x.Name, true
	}
	return "", "", false
}

// namespaces is base plus one object per data block kind (empty when none is
// given): same's value where it has one, else an object of kinds' values.
func namespaces(base map[string]cty.Value, kinds map[string]map[string]cty.Value, same map[string]cty.Value) map[string]cty.Value {
	out := make(map[string]cty.Value, len(base)+4)
	for k, v := range base {
		out[k] = v
	}
	for _, kind := range []string{blockHost, blockTarget, blockWorkload, blockGate, blockLocal} {
		if v, ok := same[kind]; ok {
			out[kind] = v
		} else {
			out[kind] = cty.ObjectVal(kinds[kind])
		}
	}
	return out
}

// stepObject is the value of the "step" namespace: step.TYPE.NAME is the outputs of
// a single instance, or an object of instance key to outputs for expanded steps;
// only the steps an expression reads are there (stepsRead).
func (e *evaluator) stepObject(outputs Outputs) cty.Value {
	return e.instanceObject(func(inst *Instance) cty.Value {
		if v, ok := outputs[inst.Addr]; ok {
			return v
		}
		return cty.UnknownVal(inst.outputType).Mark(KnownAfter(RefAddr(inst.Addr)))
	}, e.stepsRead)
}

// instanceObject shapes one value per instance as references name them:
// TYPE.NAME for a single instance, TYPE.NAME[KEY] for an expanded one. With only,
// just the steps and matrices it holds are there.
func (e *evaluator) instanceObject(valueOf func(*Instance) cty.Value, only map[string]bool) cty.Value {
	byType := map[string]map[string]cty.Value{}
	add := func(typ, name string, v cty.Value) {
		if byType[typ] == nil {
			byType[typ] = map[string]cty.Value{}
		}
		byType[typ][name] = v
	}
	keyed := map[string]map[string]cty.Value{}
	for _, inst := range e.plan.Instances {
		if only != nil && !only[inst.entity] {
			continue
		}
		v := valueOf(inst)
		if !inst.Keyed {
			add(inst.Type, inst.Name, v)
			continue
		}
		id := inst.Type + "." + inst.Name
		if keyed[id] == nil {
			keyed[id] = map[string]cty.Value{}
		}
		keyed[id][inst.Key] = v
	}
	for id, m := range keyed {
		typ, name, _ := strings.Cut(id, ".")
		add(typ, name, cty.ObjectVal(m))
	}
	// Keyed steps with no instances (an empty for_each) are still valid references.
	for _, s := range e.plan.Steps {
		if s.Keyed() && (only == nil || only[s.ID()]) {
			if _, ok := byType[s.Type][s.Name]; !ok {
				add(s.Type, s.Name, cty.EmptyObjectVal)
			}
		}
	}
	out := map[string]cty.Value{}
	for typ, m := range byType {
		out[typ] = cty.ObjectVal(m)
	}
	return cty.ObjectVal(out)
}

// Outcome is how a settled step instance ended, as a condition reads it through
// outcome.TYPE.NAME[KEY].
type Outcome struct {
	Status string // succeeded, failed, interrupted, blocked, deferred, skipped
	Class  string // the failure class, "" when it succeeded
	// Disposition is what the engine did about a failure: stop_campaign, stop_arm,
	// hold or record ("" when it succeeded or was never run).
	Disposition    string
	Requests       int // requests a block declared (0 for other steps)
	FailedRequests int // requests of a block that did not produce visible output
}

// ArmOutcome is how a matrix arm stands, as a condition reads it through
// outcome.arm.MATRIX.ARM.
type ArmOutcome struct {
	Stopped        bool   // an operational failure stopped the arm
	Reason         string // why it stopped
	Settled        bool   // every block of the arm has settled
	FailedBlocks   int    // blocks that did not succeed
	FailedRequests int    // requests without visible output, over every block
}

// OutcomeType is the object type of one instance's outcome.
var OutcomeType = cty.Object(map[string]cty.Type{
	"status": cty.String, "class": cty.String, "disposition": cty.String, "requests": cty.Number, "failed_requests": cty.Number,
})

// ArmOutcomeType is the object type of one arm's outcome.
var ArmOutcomeType = cty.Object(map[string]cty.Type{
	"stopped": cty.Bool, "reason": cty.String, "settled": cty.Bool, "clean": cty.Bool,
	"failed_blocks": cty.Number, "failed_requests": cty.Number,
})

// ConditionContext is ctx with outcome.* in scope: the outcomes of the instances
// that have settled, and of every matrix arm. An instance not settled yet is
// unknown. Only the steps a condition reads are there (outcomesRead).
func (p *Plan) ConditionContext(ctx *hcl.EvalContext, outcomes map[string]Outcome, arms map[string]map[string]ArmOutcome) *hcl.EvalContext {
	return p.outcomeContext(ctx, func(inst *Instance) cty.Value {
		o, ok := outcomes[inst.Addr]
		if !ok {
			return cty.UnknownVal(OutcomeType)
		}
		return cty.ObjectVal(map[string]cty.Value{
			"status": cty.StringVal(o.Status), "class": cty.StringVal(o.Class), "disposition": cty.StringVal(o.Disposition),
			"requests": cty.NumberIntVal(int64(o.Requests)), "failed_requests": cty.NumberIntVal(int64(o.FailedRequests)),
		})
	}, func(matrix, arm string) cty.Value {
		o := arms[matrix][arm]
		return cty.ObjectVal(map[string]cty.Value{
			"stopped": cty.BoolVal(o.Stopped), "reason": cty.StringVal(o.Reason), "settled": cty.BoolVal(o.Settled),
			"clean":         cty.BoolVal(o.Settled && !o.Stopped && o.FailedBlocks == 0 && o.FailedRequests == 0),
			"failed_blocks": cty.NumberIntVal(int64(o.FailedBlocks)), "failed_requests": cty.NumberIntVal(int64(o.FailedRequests)),
		})
	})
}

// outcomeContext is ctx with an outcome namespace: outcome.TYPE.NAME[KEY] of the
// steps a condition reads (outcomesRead), and outcome.arm.MATRIX.ARM of every arm.
func (p *Plan) outcomeContext(ctx *hcl.EvalContext, instance func(*Instance) cty.Value, arm func(matrix, arm string) cty.Value) *hcl.EvalContext {
	obj := p.ev.instanceObject(instance, p.ev.outcomesRead).AsValueMap()
	if obj == nil {
		obj = map[string]cty.Value{}
	}
	arms := map[string]cty.Value{}
	for _, m := range p.Matrices {
		byArm := map[string]cty.Value{}
		for _, a := range m.Arms {
			byArm[a.Name] = arm(m.Name, a.Name)
		}
		arms[m.Name] = cty.ObjectVal(byArm)
	}
	obj["arm"] = cty.ObjectVal(arms)
	vars := make(map[string]cty.Value, len(ctx.Variables)+1)
	for k, v := range ctx.Variables {
		vars[k] = v
	}
	vars["outcome"] = cty.ObjectVal(obj)
	return &hcl.EvalContext{Variables: vars, Functions: ctx.Functions}
}

// Condition evaluates an instance's condition in a ConditionContext: true when the
// step may start, false when it is skipped. An instance without a condition may.
func (i *Instance) ConditionHolds(ctx *hcl.EvalContext) (bool, error) {
	if i.Meta.Condition == nil {
		return true, nil
	}
	if i.each != cty.NilVal {
		// A for_each instance evaluates its condition with its own each.
		ctx = withEach(ctx, i.Key, i.each)
	}
	v, diags := i.Meta.Condition.Value(ctx)
	if diags.HasErrors() {
		return false, diags
	}
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() {
		return false, fmt.Errorf("condition %s is not known yet: it names a step that has not settled", i.Meta.ConditionText)
	}
	if v.IsNull() || v.Type() != cty.Bool {
		return false, fmt.Errorf("condition %s must be true or false", i.Meta.ConditionText)
	}
	return v.True(), nil
}
