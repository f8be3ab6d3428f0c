package plans

import (
	"container/heap"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/dominikbraun/graph"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Instance is one expanded step: what the engine schedules and runs.
type Instance struct {
	Addr      string // block.pilot["c1"]
	Type      string
	Name      string
	Key       string
	Keyed     bool
	Index     int      // declaration order; the tie-break of the run order
	DependsOn []string // addresses of the instances this one waits for, sorted
	// After are instances this one starts after, whatever their outcome: the arms of
	// a matrix run in order even when an arm stops, and a condition reads the
	// outcomes it names only once they are settled. Sorted.
	After     []string
	Meta      Meta
	DeclRange hcl.Range

	// Matrix instances carry their cell: arm, concurrency and repetition.
	Arm  string
	Cell string

	outputType cty.Type
	entity     string
	source     map[string]string // what unknown values hide; see sourceDigester
	each       cty.Value         // each.value of a for_each instance (cty.NilVal otherwise)
	during     hcl.Expression    // the during meta-argument, resolved by resolveDuring
	seqPrev    string            // the sibling a sequential step's instance starts after
	evalConfig func(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics)
	ev         *evaluator
	data       []*DataBlock // the data blocks the instance reads, checked by Evaluate

	// appendConfig, where set, appends AppendCanonicalJSON(b, evalConfig(ctx))
	// without building the configuration (matrix blocks).
	appendConfig func(b []byte, ctx *hcl.EvalContext) ([]byte, error)
	// checkConfig, where set, returns evalConfig's diagnostics without building
	// the configuration (matrix blocks).
	checkConfig func(ctx *hcl.EvalContext) hcl.Diagnostics
	// configJSON, where set, is AppendCanonicalJSON of the plan-time
	// configuration, kept by Load (steps other than matrix blocks).
	configJSON []byte
	// publicSecrets are the public arguments whose plan-time value holds a
	// sensitive one (steps only; see checkSensitive).
	publicSecrets []string
}

// Evaluate computes the instance's configuration in ctx (see Plan.Context). The
// data blocks it reads are checked against their schemas first: a value that was
// unknown at plan time (a step's output) is checked here, before the step starts.
func (i *Instance) Evaluate(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	for _, d := range i.data {
		diags = append(diags, i.ev.checkData(d, ctx)...)
	}
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	return i.evalConfig(ctx)
}

// Config is the configuration evaluated at plan time; values produced by other
// steps are unknown in it. The engine re-evaluates with real outputs before a run.
// It is evaluated again on each call rather than kept: the configurations of a
// 119,000-instance campaign held about 220 MB for as long as the plan lived, and
// what a plan does with them (its hash, plan show) reads each once. Evaluation in
// the plan-time context is deterministic, and its diagnostics were Load's.
func (i *Instance) Config() cty.Value {
	if i.evalConfig == nil || i.ev == nil || i.ev.planCtx == nil {
		return cty.NilVal
	}
	v, _ := i.evalConfig(i.ev.planCtx)
	return v
}

// Predecessors are every instance this one starts after: its dependencies and its
// After instances.
func (i *Instance) Predecessors() []string {
	if len(i.After) == 0 {
		return i.DependsOn
	}
	return append(append([]string(nil), i.DependsOn...), i.After...)
}

// OutputType is the object type of the instance's outputs.
func (i *Instance) OutputType() cty.Type { return i.outputType }

// expand turns step and matrix blocks into instances, wires their dependencies and
// orders them.
func (p *Plan) expand(types StepTypes) hcl.Diagnostics {
	e := p.ev
	var diags hcl.Diagnostics
	// for_each may name variables and data blocks, never step outputs, so a context
	// without steps suffices to expand.
	ctx0, d := e.context(nil, false)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return diags
	}
	diags = append(diags, p.evalOutage(ctx0)...)
	type decl struct {
		order int
		step  *StepBlock
		mat   *Matrix
	}
	var decls []decl
	for _, s := range p.Steps {
		decls = append(decls, decl{order: s.Order, step: s})
	}
	for _, m := range p.Matrices {
		decls = append(decls, decl{order: m.Order, mat: m})
	}
	sort.Slice(decls, func(a, b int) bool { return decls[a].order < decls[b].order })

	// Declarations expand on every core: each reads the plan and writes only its own
	// instances (and a matrix its own Matrix). They are merged in declaration order.
	type expansion struct {
		insts  []*Instance
		setups []armSetup
		diags  hcl.Diagnostics
	}
	expanded := make([]expansion, len(decls))
	parallelFor(len(decls), 16, func(i int) {
		x := &expanded[i]
		if dcl := decls[i]; dcl.step != nil {
			x.insts, x.diags = p.expandStep(dcl.step, ctx0)
		} else {
			x.insts, x.setups, x.diags = p.expandMatrix(dcl.mat, ctx0, types)
		}
	})
	// A declaration's instances are one entity's, all of them.
	total := 0
	for _, x := range expanded {
		total += len(x.insts)
	}
	byEntity := make(map[string][]*Instance, len(decls))
	all := make([]*Instance, 0, total)
	p.byAddr = make(map[string]*Instance, total)
	var armSetups []armSetup
	for _, x := range expanded {
		armSetups = append(armSetups, x.setups...)
		diags = append(diags, x.diags...)
		if len(x.insts) == 0 {
			continue
		}
		entity := x.insts[0].entity
		data := e.dataClosure(entity)
		for _, inst := range x.insts {
			inst.Index = len(all)
			inst.ev, inst.data = e, data
			all = append(all, inst)
			p.byAddr[inst.Addr] = inst
		}
		byEntity[entity] = slices.Clip(x.insts)
	}
	if diags.HasErrors() {
		return diags
	}
	p.Instances = all
	diags = append(diags, p.wireDependencies(byEntity, armSetups)...)
	if diags.HasErrors() {
		return diags
	}
	before, d := p.wireOrder(byEntity, ctx0)
	diags = append(diags, d...)
	if diags.HasErrors() {
		return diags
	}
	p.placeOrder(before)
	diags = append(diags, p.resolveDuring(ctx0)...)
	if diags.HasErrors() {
		return diags
	}
	ordered, d := p.runOrder()
	diags = append(diags, d...)
	if diags.HasErrors() {
		return diags
	}
	p.Instances = ordered
	// Evaluate every configuration once at plan time: type errors surface now, and
	// the canonical plan shows what is known and what waits for which step.
	ctx, d := p.Context(nil)
	diags = append(diags, d...)
	e.planCtx = ctx
	sources := newSourceDigester(p, ctx)
	secrets := p.hasSensitiveVariables()
	// Evaluation only reads the context and the syntax tree, so instances are
	// evaluated on every core; diagnostics are merged in run order. Each instance's
	// source parts are digested with it, reading what is known from its configuration.
	instDiags := make([]hcl.Diagnostics, len(p.Instances))
	parallelFor(len(p.Instances), 256, func(n int) {
		inst := p.Instances[n]
		if inst.checkConfig != nil {
			instDiags[n] = inst.checkConfig(ctx)
			inst.source = sources.instance(inst, cty.NilVal)
			return
		}
		v, d := inst.evalConfig(ctx)
		instDiags[n] = d
		if d.HasErrors() {
			inst.source = sources.instance(inst, cty.NilVal)
		} else {
			inst.source = sources.instance(inst, v)
			if s, ok := e.entities[inst.entity].(*StepBlock); ok && secrets {
				inst.publicSecrets = publicSecrets(s.StepType, v)
			}
			// Kept for the plan hash: a step's configuration JSON is a few hundred
			// bytes, decoding it again costs tens of microseconds.
			if b, err := AppendCanonicalJSON(nil, v); err == nil {
				inst.configJSON = slices.Clip(b)
			}
		}
	})
	out := distinctDiags{diags: diags}
	for _, d := range instDiags {
		out.add(d...)
	}
	diags = out.diags
	return diags
}

// maxMatrixInstances bounds one matrix so a typo such as repetitions = 300000
// is an error, not an hour of expansion.
const maxMatrixInstances = 100000

type armSetup struct {
	matrix   string
	arm      *Arm
	prevArm  string
	armIndex int
}

func (p *Plan) expandStep(s *StepBlock, ctx0 *hcl.EvalContext) ([]*Instance, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	spec := s.StepType.Spec()
	// A step type whose schema names the phase meta-argument receives its value
	// as an argument the content holds; one content per phase the instances have.
	contents := map[string]decodedBody{}
	contentFor := func(phase string) decodedBody {
		if b, ok := contents[phase]; ok {
			return b
		}
		b := decodedBody{Body: s.Body, content: s.content, diags: s.contentDiags}
		if _, wants := spec[metaPhase]; wants && phase != "" && s.content != nil {
			rng := s.DeclRange
			if a, ok := s.MetaAttrs[metaPhase]; ok {
				rng = a.Expr.Range()
			}
			withPhase := *s.content
			withPhase.Attributes = maps.Clone(s.content.Attributes)
			withPhase.Attributes[metaPhase] = &hcl.Attribute{Name: metaPhase, Expr: hcl.StaticExpr(cty.StringVal(phase), rng), Range: rng, NameRange: rng}
			b.content = &withPhase
		}
		contents[phase] = b
		return b
	}
	mk := func(key string, keyed bool, each cty.Value) *Instance {
		inst := &Instance{
			Addr: InstanceAddr(s.Type, s.Name, key, keyed), Type: s.Type, Name: s.Name, Key: key, Keyed: keyed,
			DeclRange: s.DeclRange, outputType: s.StepType.OutputType(), entity: s.ID(), each: each,
		}
		ictx := ctx0
		if keyed {
			ictx = withEach(ctx0, key, each)
		}
		meta, md := decodeMeta(s.MetaAttrs, ictx, p.ev.vocab.Enums[EnumFailureClass])
		diags = append(diags, md...)
		meta.ConditionText = p.exprText(meta.Condition)
		inst.Meta = meta
		if s.Type == "block" {
			diags = append(diags, checkAgents(agentsAttr(s.Body), ictx)...)
		}
		if a, ok := s.MetaAttrs[metaDuring]; ok {
			inst.during = a.Expr
		}
		body := contentFor(meta.Phase)
		inst.evalConfig = func(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
			if keyed {
				ctx = withEach(ctx, key, each)
			}
			v, d := hcldec.Decode(body, spec, ctx)
			if len(d) > 0 { // the engine evaluates every instance again before it runs
				d = listValid(d, fmt.Sprintf("step type %q", s.Type), specNames(spec))
			}
			return v, d
		}
		return inst
	}
	if ma, ok := s.StepType.(MatrixArguments); ok {
		if body, ok := s.Body.(*hclsyntax.Body); ok {
			for _, name := range ma.MatrixArguments() {
				if a, set := body.Attributes[name]; set {
					diags = append(diags, errorAt(a.NameRange, "Argument set by a matrix",
						"%s is set by a matrix for each block it expands into; a %q step cannot set it. Remove it.", name, s.Type))
				}
			}
		}
	}
	count, sequential, d := p.decodeRepeat(s, ctx0)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	if s.ForEach == nil {
		if count == 0 {
			return []*Instance{mk("", false, cty.NilVal)}, diags
		}
		var insts []*Instance
		for n := 1; n <= count; n++ {
			insts = append(insts, mk(fmt.Sprint(n), true, cty.NumberIntVal(int64(n))))
		}
		return chain(insts, sequential), diags
	}
	// With count, each for_each key stands for count instances KEY/1..KEY/N, in
	// that order, and each.value is the key's value in all of them.
	keyed := func(key string, each cty.Value) []*Instance {
		if count == 0 {
			return []*Instance{mk(key, true, each)}
		}
		out := make([]*Instance, 0, count)
		for n := 1; n <= count; n++ {
			out = append(out, mk(fmt.Sprintf("%s/%d", key, n), true, each))
		}
		return out
	}
	fe, d := s.ForEach.Value(ctx0)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	fe, pvm := fe.UnmarkDeepWithPaths()
	// Instance keys name instances in addresses, logs and evidence, so they must
	// not be sensitive; a sensitive value stays sensitive in each.value.
	sensitiveKeys := map[string]bool{}
	for _, pm := range pvm {
		if _, ok := pm.Marks[Sensitive]; !ok {
			continue
		}
		key, ok := forEachKey(fe, pm.Path)
		if !ok {
			return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument",
				"for_each uses a sensitive value as instance keys; keys appear in addresses, logs and evidence. Use a map whose keys are not sensitive."))
		}
		sensitiveKeys[key] = true
	}
	if !fe.IsWhollyKnown() {
		return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument",
			"for_each must be known at plan time; it cannot depend on a step's outputs."))
	}
	if fe.IsNull() {
		return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument", "for_each must not be null."))
	}
	var insts []*Instance
	switch {
	case fe.Type().IsMapType() || fe.Type().IsObjectType():
		keys := make([]string, 0, fe.LengthInt())
		vals := map[string]cty.Value{}
		for it := fe.ElementIterator(); it.Next(); {
			k, v := it.Element()
			keys = append(keys, k.AsString())
			vals[k.AsString()] = v
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := vals[k]
			if sensitiveKeys[k] {
				v = v.Mark(Sensitive)
			}
			insts = append(insts, keyed(k, v)...)
		}
	case fe.Type().IsSetType() || fe.Type().IsListType() || fe.Type().IsTupleType():
		var keys []string
		for _, v := range fe.AsValueSlice() {
			sv, err := convert.Convert(v, cty.String)
			if err != nil || sv.IsNull() {
				return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument", "for_each over a list or set needs strings, one per instance."))
			}
			keys = append(keys, sv.AsString())
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i > 0 && keys[i-1] == k {
				return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument", "for_each has the key %q twice; keys name instances and must be unique.", k))
			}
			insts = append(insts, keyed(k, cty.StringVal(k))...)
		}
	default:
		return nil, append(diags, errorAt(s.ForEach.Range(), "Invalid for_each argument",
			"for_each must be a map, an object, or a set of strings; got %s.", fe.Type().FriendlyName()))
	}
	return chain(insts, sequential), diags
}

// chain makes each instance start after the one before it when the step is
// sequential (wireDependencies turns seqPrev into an After edge: a sibling that
// failed under on_failure = "continue" does not block the next one).
func chain(insts []*Instance, sequential bool) []*Instance {
	if sequential {
		for i := 1; i < len(insts); i++ {
			insts[i].seqPrev = insts[i-1].Addr
		}
	}
	return insts
}

// decodeRepeat evaluates count and sequential, which shape the expansion and so
// must be known before any step runs. count is 0 when the step has none.
func (p *Plan) decodeRepeat(s *StepBlock, ctx0 *hcl.EvalContext) (int, bool, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	count := 0
	if s.Count != nil {
		v, d := metaValue(metaCount, s.Count, ctx0)
		diags = append(diags, d...)
		if d.HasErrors() {
			return 0, false, diags
		}
		v, _ = v.UnmarkDeep()
		ok := v.IsWhollyKnown() && !v.IsNull() && v.Type() == cty.Number
		if ok {
			n, acc := v.AsBigFloat().Int64()
			ok = acc == big.Exact && n >= 1 && n <= maxCount
			count = int(n)
		}
		if !ok {
			return 0, false, append(diags, errorAt(s.Count.Range(), "Invalid count",
				"count must be a whole number from 1 to %d known at plan time; it says how many instances of %s to run (each for_each key times count).", maxCount, s.ID()))
		}
	}
	sequential := false
	if s.Sequential != nil {
		v, d := metaValue(metaSequential, s.Sequential, ctx0)
		diags = append(diags, d...)
		if d.HasErrors() {
			return 0, false, diags
		}
		v, _ = v.Unmark()
		if v.Type() != cty.Bool || v.IsNull() || !v.IsKnown() {
			return 0, false, append(diags, errorAt(s.Sequential.Range(), "Incorrect attribute value type", "sequential must be true or false, known at plan time."))
		}
		sequential = v.True()
		if sequential && !s.Keyed() {
			return 0, false, append(diags, errorAt(s.Sequential.Range(), "Invalid sequential",
				"sequential orders the instances of a step with for_each or count, each after the one before it; %s has one instance. Add count or for_each, or remove sequential.", s.ID()))
		}
	}
	return count, sequential, diags
}

// decodedBody is a step's body whose content is already known: hcldec.Decode asks
// a body for its content under the schema its spec implies, the same for every
// instance of a step, and Content returns the one decodeStepBlock found (with
// the phase meta-argument added where the step type reads it). Only
// hcldec.Decode with the step type's spec may read it.
type decodedBody struct {
	hcl.Body
	content *hcl.BodyContent
	diags   hcl.Diagnostics
}

// Content is the content found under the step type's schema. Its diagnostics
// are copies: instances are decoded on every core, and hcldec appends to them and
// listValid edits them.
func (b decodedBody) Content(*hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	for _, d := range b.diags {
		c := *d
		diags = append(diags, &c)
	}
	return b.content, diags
}

// forEachKey is the instance key a marked path inside a for_each map or object
// belongs to; false when the mark is on the whole value or on a list or set element
// (whose values are the keys).
func forEachKey(fe cty.Value, path cty.Path) (string, bool) {
	if len(path) == 0 || !(fe.Type().IsMapType() || fe.Type().IsObjectType()) {
		return "", false
	}
	switch st := path[0].(type) {
	case cty.GetAttrStep:
		return st.Name, true
	case cty.IndexStep:
		if st.Key.Type() == cty.String {
			return st.Key.AsString(), true
		}
	}
	return "", false
}

func withEach(ctx *hcl.EvalContext, key string, value cty.Value) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{
		"key": cty.StringVal(key), "value": value,
	})}
	return child
}

// expandMatrix builds the block instances of a matrix: arms, then concurrencies,
// then an optional priming block and the repetitions.
func (p *Plan) expandMatrix(m *Matrix, ctx0 *hcl.EvalContext, types StepTypes) ([]*Instance, []armSetup, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	blockType, ok := types["block"]
	if !ok {
		return nil, nil, hcl.Diagnostics{errorAt(m.DeclRange, "Matrix needs the block step type", "No step type \"block\" is registered.")}
	}
	spec := blockType.Spec()
	concs, d := knownInts(m.Attrs["concurrency"], ctx0, 1)
	diags = append(diags, d...)
	m.Concurrencies = concs
	reps := []int{1}
	if a, ok := m.Attrs["repetitions"]; ok {
		r, d := knownInts(a, ctx0, 1)
		diags = append(diags, d...)
		if len(r) == 1 {
			reps = []int{r[0]}
		} else if !d.HasErrors() {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid repetitions", "repetitions must be one whole number."))
		}
	}
	m.Repetitions = reps[0]
	priming := false
	if a, ok := m.Attrs["priming"]; ok {
		v, d := a.Expr.Value(ctx0)
		diags = append(diags, d...)
		if !d.HasErrors() {
			if v.Type() != cty.Bool || v.IsNull() || !v.IsKnown() {
				diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "priming must be true or false."))
			} else {
				priming = v.True()
			}
		}
	}
	phase, d := matrixEnum(m, metaPhase, "Invalid phase", MatrixPhases, "measured", ctx0)
	diags = append(diags, d...)
	m.Phase = phase
	mo, d := decodeOrder(m, ctx0)
	diags = append(diags, d...)
	m.Ordering = &mo
	corpus, d := decodeCorpus(m, ctx0, concs, priming)
	diags = append(diags, d...)
	metaAttrs := hcl.Attributes{}
	for _, n := range []string{"timeout", "uses", "on_failure", metaCondition} {
		if a, ok := m.Attrs[n]; ok {
			metaAttrs[n] = a
		}
	}
	meta, md := decodeMeta(metaAttrs, ctx0, p.ev.vocab.Enums[EnumFailureClass])
	diags = append(diags, md...)
	meta.ConditionText = p.exprText(meta.Condition)
	if diags.HasErrors() {
		return nil, nil, diags
	}
	needs := []string{"target", "workload", "concurrency", "requests", "repetition", "arm", "cell", "gates"}
	if m.Attrs["corpus_seed"] != nil {
		needs = append(needs, "corpus_seed")
	}
	if m.Attrs["expect_cache"] != nil {
		needs = append(needs, "expect_cache")
	}
	if len(corpus.reset) > 0 {
		needs = append(needs, "reset_cache")
	}
	if a := m.Attrs[AttrAgents]; a != nil {
		needs = append(needs, AttrAgents)
		diags = append(diags, checkAgents(a, ctx0)...)
	}
	for _, name := range needs {
		if _, ok := spec[name]; !ok {
			return nil, nil, hcl.Diagnostics{errorAt(m.DeclRange, "Matrix cannot expand block", "The block step type has no %q argument.", name)}
		}
	}
	perCell := reps[0]
	if priming {
		perCell++
	}
	if n := len(m.Arms) * len(concs) * perCell; n > maxMatrixInstances {
		return nil, nil, hcl.Diagnostics{errorAt(m.DeclRange, "Matrix too large",
			"This matrix expands to %d blocks (%d arms x %d concurrencies x %d per cell); the limit is %d.", n, len(m.Arms), len(concs), perCell, maxMatrixInstances)}
	}
	shared := newMatrixShared(m, hcldec.ImpliedType(spec))
	var insts []*Instance
	var setups []armSetup
	// mk builds one block instance of the matrix.
	mk := func(arm *Arm, c int, key string, rep int, ph string, redeployed bool) *Instance {
		im := meta
		im.Phase = ph
		inst := &Instance{
			Addr: InstanceAddr("block", m.Name, key, true), Type: "block", Name: m.Name, Key: key, Keyed: true,
			Meta: im, DeclRange: m.DeclRange, outputType: blockType.OutputType(), entity: m.ID(),
			Arm: arm.Name, Cell: fmt.Sprintf("%s/c%d", arm.Name, c),
		}
		cb := cellBlock{conc: c, rep: rep, cell: inst.Cell, phase: ph}
		// The first block of each cell resets the cache when the arm says so;
		// a measured repetition is primed when a priming block or an earlier
		// repetition sent its corpus before it.
		cb.reset = corpus.reset[arm.Name] && (ph == "priming" || (!priming && rep == 1))
		if rep > 0 {
			// A target deployed again for a swap starts with an empty cache: what
			// the arm sent before is gone.
			cb.primed = (priming || rep > 1) && !redeployed
			cb.expect = corpus.expect
		}
		cell := &matrixCell{shared: shared, arm: arm, cb: cb}
		inst.evalConfig, inst.appendConfig = cell.config, cell.appendCanonical
		inst.checkConfig = cell.check
		return inst
	}
	if mo.Order == OrderDeclared {
		var prevTarget string
		var seq []string
		for ai, arm := range m.Arms {
			prev := ""
			if ai > 0 {
				prev = m.Arms[ai-1].Name
			}
			t := armTargetName(arm, ctx0)
			if ai > 0 && t != prevTarget {
				mo.Swaps++
			}
			prevTarget = t
			seq = append(seq, arm.Name)
			setups = append(setups, armSetup{matrix: m.ID(), arm: arm, prevArm: prev, armIndex: ai})
			for _, c := range concs {
				if priming {
					insts = append(insts, mk(arm, c, fmt.Sprintf("%s/c%d/prime", arm.Name, c), 0, "priming", false))
				}
				for r := 1; r <= reps[0]; r++ {
					insts = append(insts, mk(arm, c, fmt.Sprintf("%s/c%d/r%d", arm.Name, c, r), r, phase, false))
				}
			}
		}
		mo.Sequences = [][]string{seq}
		return insts, setups, diags
	}
	// Repetition by repetition: each repetition runs every arm once, in the order's
	// sequence; an arm's priming blocks come with its first run.
	primed := map[string]bool{}
	// A swap onto a target that some arm deploys runs that deploy again
	// (wireOrder).
	deployed := map[string]bool{}
	for _, a := range m.Arms {
		if len(a.Setup) > 0 {
			deployed[armTargetName(a, ctx0)] = true
		}
	}
	var prev *Segment
	for r := 1; r <= reps[0]; r++ {
		var seq []string
		for _, ai := range armSequence(mo.Order, mo.Seed, len(m.Arms), r) {
			arm := m.Arms[ai]
			seg := &Segment{Repetition: r, Arm: arm.Name, Target: armTargetName(arm, ctx0), arm: arm}
			if prev != nil && prev.Target != seg.Target {
				mo.Swaps++
			}
			seq = append(seq, arm.Name)
			redeployed := primed[arm.Name] && prev != nil && prev.Target != seg.Target && deployed[seg.Target]
			for _, c := range concs {
				if priming && !primed[arm.Name] {
					seg.blocks = append(seg.blocks, mk(arm, c, fmt.Sprintf("%s/c%d/prime", arm.Name, c), 0, "priming", false))
				}
				seg.blocks = append(seg.blocks, mk(arm, c, fmt.Sprintf("%s/c%d/r%d", arm.Name, c, r), r, phase, redeployed))
			}
			primed[arm.Name] = true
			insts = append(insts, seg.blocks...)
			mo.Segments = append(mo.Segments, seg)
			prev = seg
		}
		mo.Sequences = append(mo.Sequences, seq)
	}
	return insts, setups, diags
}

// cellBlock is what one matrix instance's configuration adds to the matrix's own.
type cellBlock struct {
	conc, rep     int
	cell, phase   string
	primed, reset bool
	expect        string // "" = the block derives its expected cache state
}

// matrixShared is what the instances of one matrix have in common: each
// attribute's value depends on the context, the arm (its target) and the
// concurrency (a per-cell map), never on the repetition or phase. It is evaluated
// once per context and key and shared, since cty values are immutable; a 10 MB
// campaign's 76,000 blocks otherwise evaluated, marked and converted every
// matrix attribute 76,000 times.
type matrixShared struct {
	m       *Matrix
	implied cty.Type
	names   []string // implied's attribute names, sorted
	// converted are the names, after evaluatedAttrs, whose conversion check may
	// fail: a value a cell gives itself is left out when the block's type already
	// is that value's type, since such a conversion cannot fail (80,000 blocks
	// made and converted eight values each).
	converted []string
	mu        sync.Mutex
	ctx       *hcl.EvalContext // the context memo belongs to; contexts are never changed once built
	memo      map[sharedKey]sharedVal
}

func newMatrixShared(m *Matrix, implied cty.Type) *matrixShared {
	s := &matrixShared{m: m, implied: implied, names: sortedKeys(implied.AttributeTypes())}
	for _, name := range s.names {
		if slices.Contains(evaluatedAttrs, name) {
			continue
		}
		if t, own := ownTypes[name]; own {
			if want := implied.AttributeType(name); want.Equals(t) || want == cty.DynamicPseudoType {
				continue
			}
		}
		s.converted = append(s.converted, name)
	}
	return s
}

type sharedKey struct {
	attr string
	arm  *Arm // nil unless the value is the arm's
	conc int  // 0 unless the value is the cell's
}

type sharedVal struct {
	v     cty.Value
	diags hcl.Diagnostics
	json  []byte // AppendCanonicalJSON of v; nil when v could not be encoded
}

// attr is the value of a configuration attribute converted to the block's type,
// computed once per context and key: x's value, with this cell's entry picked
// when perCell and x's value is a per-cell map; with req, the cell's request
// count. Two instances may compute the same key at once; both get equal values.
func (s *matrixShared) attr(ctx *hcl.EvalContext, key sharedKey, x hcl.Expression, perCell, req bool) sharedVal {
	s.mu.Lock()
	if s.ctx != ctx {
		s.ctx, s.memo = ctx, map[sharedKey]sharedVal{}
	}
	sv, ok := s.memo[key]
	s.mu.Unlock()
	if ok {
		return sv
	}
	v, diags := x.Value(ctx)
	if req {
		v = requestsFor(v, key.conc, x.Range(), &diags)
	} else if perCell {
		u, marks := v.Unmark()
		if isCellMap(u) {
			if e, ok := cellEntry(u, key.conc); ok {
				v = e.WithMarks(marks)
			}
		}
	}
	if !diags.HasErrors() {
		v, diags = s.convert(key.attr, v, diags)
	}
	sv = sharedVal{v: v, diags: diags}
	if !diags.HasErrors() {
		sv.json, _ = AppendCanonicalJSON(nil, v)
	}
	s.mu.Lock()
	if s.ctx == ctx {
		s.memo[key] = sv
	}
	s.mu.Unlock()
	return sv
}

// convert converts v to the block's type of attribute name.
func (s *matrixShared) convert(name string, v cty.Value, diags hcl.Diagnostics) (cty.Value, hcl.Diagnostics) {
	aty := s.implied.AttributeType(name)
	cv, err := convertMarked(v, aty)
	if err != nil {
		diags = append(diags, errorAt(s.m.DeclRange, "Incorrect matrix value", "%s: %s.", name, err))
		cv = cty.UnknownVal(aty)
	}
	return cv, diags
}

// matrixCell is one block of a matrix: the matrix's shared values and its cell's own.
type matrixCell struct {
	shared *matrixShared
	arm    *Arm
	cb     cellBlock
}

// evaluatedAttrs are the attributes a block takes from the matrix's expressions,
// in the order their diagnostics are reported.
var evaluatedAttrs = []string{"target", "workload", "corpus_seed", "gates", AttrAgents, "requests"}

// value is the block's attribute name; false when the matrix leaves it null. A
// value taken from the matrix's expressions is shared and comes with its
// canonical JSON; the cell's own values are made on each call, which costs less
// than keeping them.
func (c *matrixCell) value(ctx *hcl.EvalContext, name string) (sharedVal, bool) {
	s, m, cb := c.shared, c.shared.m, c.cb
	var v cty.Value
	switch name {
	case "target":
		return s.attr(ctx, sharedKey{attr: name, arm: c.arm}, c.arm.Target, false, false), true
	case "workload", "corpus_seed":
		if a, ok := m.Attrs[name]; ok {
			return s.attr(ctx, sharedKey{attr: name, conc: cb.conc}, a.Expr, true, false), true
		}
		return sharedVal{}, false
	case "gates", AttrAgents:
		if a, ok := m.Attrs[name]; ok {
			return s.attr(ctx, sharedKey{attr: name}, a.Expr, false, false), true
		}
		return sharedVal{}, false
	case "requests":
		return s.attr(ctx, sharedKey{attr: name, conc: cb.conc}, m.Attrs[name].Expr, false, true), true
	case "concurrency":
		v = cty.NumberIntVal(int64(cb.conc))
	case "repetition":
		v = cty.NumberIntVal(int64(cb.rep))
	case "arm":
		v = cty.StringVal(c.arm.Name)
	case "cell":
		v = cty.StringVal(cb.cell)
	case metaPhase:
		v = cty.StringVal(cb.phase)
	case "primed":
		v = cty.BoolVal(cb.primed)
	case "reset_cache":
		v = cty.BoolVal(cb.reset)
	case "expect_cache":
		if cb.expect == "" {
			return sharedVal{}, false
		}
		v = cty.StringVal(cb.expect)
	default:
		return sharedVal{}, false
	}
	cv, d := s.convert(name, v, nil)
	return sharedVal{v: cv, diags: d}, true
}

// ownTypes are the types of the values a cell gives its block itself.
var ownTypes = map[string]cty.Type{
	"concurrency": cty.Number, "repetition": cty.Number, "arm": cty.String, "cell": cty.String,
	metaPhase: cty.String, "primed": cty.Bool, "reset_cache": cty.Bool, "expect_cache": cty.String,
}

// check is the diagnostics of the block's configuration.
func (c *matrixCell) check(ctx *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, name := range evaluatedAttrs {
		if sv, ok := c.value(ctx, name); ok {
			diags = append(diags, sv.diags...)
		}
	}
	if diags.HasErrors() {
		return diags
	}
	for _, name := range c.shared.converted {
		if sv, ok := c.value(ctx, name); ok {
			diags = append(diags, sv.diags...)
		}
	}
	return diags
}

// config is the block's configuration object: every attribute of the block step
// type, null where the matrix sets nothing.
func (c *matrixCell) config(ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	diags := c.check(ctx)
	if diags.HasErrors() {
		return cty.DynamicVal, diags
	}
	full := make(map[string]cty.Value, len(c.shared.names))
	for name, aty := range c.shared.implied.AttributeTypes() {
		if sv, ok := c.value(ctx, name); ok {
			full[name] = sv.v
		} else {
			full[name] = cty.NullVal(aty)
		}
	}
	return cty.ObjectVal(full), diags
}

// appendCanonical appends AppendCanonicalJSON of config(ctx) without building the
// object, copying the JSON of the shared values: the attributes in sorted order,
// each value as AppendCanonicalJSON writes it, null for those the matrix leaves
// unset.
func (c *matrixCell) appendCanonical(b []byte, ctx *hcl.EvalContext) ([]byte, error) {
	start := len(b)
	b = append(b, '{')
	for n, name := range c.shared.names {
		if n > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, name)
		b = append(b, ':')
		sv, ok := c.value(ctx, name)
		switch {
		case sv.diags.HasErrors():
			// config would be cty.DynamicVal.
			return AppendCanonicalJSON(b[:start], cty.DynamicVal)
		case !ok:
			b = append(b, "null"...)
		case sv.json != nil:
			b = append(b, sv.json...)
		default:
			var err error
			if b, err = AppendCanonicalJSON(b, sv.v); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

// requestsFor picks the request count of one concurrency: requests is a number, or
// a map keyed "c<N>" (or "<N>") such as the counts a freeze step records.
func requestsFor(req cty.Value, conc int, rng hcl.Range, diags *hcl.Diagnostics) cty.Value {
	v := pickRequests(req, conc, rng, diags)
	// Checked here, not at plan time only: a count frozen from a pilot becomes
	// known when the freeze step ran, and is checked before the cell starts.
	for _, d := range WholeAtLeast("requests", 1)(v) {
		d.Subject = rng.Ptr()
		*diags = append(*diags, d)
	}
	return v
}

func pickRequests(req cty.Value, conc int, rng hcl.Range, diags *hcl.Diagnostics) cty.Value {
	unmarked, marks := req.Unmark()
	if !unmarked.IsKnown() {
		return cty.UnknownVal(cty.Number).WithMarks(marks)
	}
	ty := unmarked.Type()
	if ty == cty.Number {
		return req
	}
	if ty.IsMapType() || ty.IsObjectType() {
		if e, ok := cellEntry(unmarked, conc); ok {
			return e.WithMarks(marks)
		}
		*diags = append(*diags, errorAt(rng, "Missing request count", "requests has no entry for concurrency %d; use the key \"c%d\".", conc, conc))
		return cty.UnknownVal(cty.Number)
	}
	*diags = append(*diags, errorAt(rng, "Incorrect attribute value type", "requests must be a number or a map keyed by concurrency (\"c4\")."))
	return cty.UnknownVal(cty.Number)
}

func convertMarked(v cty.Value, ty cty.Type) (cty.Value, error) {
	if ty == cty.DynamicPseudoType || v.Type().Equals(ty) {
		// Nothing to convert: keep v, marks and all, rather than rebuilding a copy
		// of it (a target object) for every matrix instance.
		return v, nil
	}
	u, pvm := v.UnmarkDeepWithPaths()
	cv, err := convert.Convert(u, ty)
	if err != nil {
		return cty.NilVal, err
	}
	if !cv.IsKnown() || len(pvm) == 0 {
		marks := make(cty.ValueMarks)
		for _, pm := range pvm {
			for mk := range pm.Marks {
				marks[mk] = struct{}{}
			}
		}
		if !cv.IsKnown() {
			return cv.WithMarks(marks), nil
		}
		return cv, nil
	}
	// Converted structure can differ, so keep marks on the whole value where the
	// paths no longer line up; sensitive stays sensitive either way.
	out, err := safeMarkWithPaths(cv, pvm)
	if err != nil {
		return cv.WithMarks(markOf(v)), nil
	}
	return out, nil
}

func safeMarkWithPaths(v cty.Value, pvm []cty.PathValueMarks) (out cty.Value, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("marks do not fit: %v", r)
		}
	}()
	return v.MarkWithPaths(pvm), nil
}

func knownInts(a *hcl.Attribute, ctx *hcl.EvalContext, min int) ([]int, hcl.Diagnostics) {
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() {
		return nil, diags
	}
	v, _ = v.UnmarkDeep()
	if !v.IsWhollyKnown() || v.IsNull() {
		return nil, append(diags, errorAt(a.Expr.Range(), "Value must be known at plan time", "%s must be known before anything runs.", a.Name))
	}
	var vals []cty.Value
	if v.Type() == cty.Number {
		vals = []cty.Value{v}
	} else if v.CanIterateElements() && !v.Type().IsMapType() && !v.Type().IsObjectType() {
		vals = v.AsValueSlice()
	} else {
		return nil, append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a whole number or a list of whole numbers.", a.Name))
	}
	var out []int
	for _, e := range vals {
		if e.Type() != cty.Number || e.IsNull() {
			return nil, append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a whole number or a list of whole numbers.", a.Name))
		}
		f, _ := e.AsBigFloat().Float64()
		if f != math.Trunc(f) || f < float64(min) || f > 1e6 {
			return nil, append(diags, errorAt(a.Expr.Range(), "Invalid value", "%s must hold whole numbers of at least %d; got %v.", a.Name, min, f))
		}
		out = append(out, int(f))
	}
	return out, diags
}

// wireDependencies turns references into instance-level dependencies. Each
// instance's references are resolved on every core, into sets indexed by the
// instance's place in p.Instances; arm setups follow, then each instance's sets
// become its sorted DependsOn and After. Diagnostics keep instance order.
func (p *Plan) wireDependencies(byEntity map[string][]*Instance, setups []armSetup) hcl.Diagnostics {
	e := p.ev
	n := len(p.Instances)
	deps := make([]map[string]bool, n)
	after := make([]map[string]bool, n)
	found := make([]hcl.Diagnostics, n)
	// add wires one reference of inst; it writes only inst's own sets.
	add := func(inst *Instance, r ref) {
		into := deps
		if r.After {
			into = after
		}
		if into[inst.Index] == nil {
			into[inst.Index] = map[string]bool{}
		}
		targets := []ref{r}
		switch d := e.entities[r.Entity].(type) {
		case *DataBlock, *Local:
			// Through a data block or a local, a reference depends on the steps
			// they name.
			targets = e.stepDeps[d.(valueNode).ID()]
		}
		for _, t := range targets {
			insts := byEntity[t.Entity]
			if t.Key != nil {
				var match *Instance
				for _, x := range insts {
					if x.Key == *t.Key {
						match = x
					}
				}
				if match == nil {
					var keys []string
					for _, x := range insts {
						keys = append(keys, x.Key)
					}
					found[inst.Index] = append(found[inst.Index], errorAt(t.Range, "Reference to undeclared instance",
						"%s has no instance with key %q.%s", t.Entity, *t.Key, didYouMean(*t.Key, keys)))
					continue
				}
				insts = []*Instance{match}
			}
			for _, x := range insts {
				if x != inst && (r.Arm == "" || x.Arm == r.Arm) {
					into[inst.Index][x.Addr] = true
				}
			}
		}
	}
	// armOf maps each arm target reference to its arm, once per matrix, so a matrix
	// instance depends on its own arm's target and not on every arm's.
	armOf := map[string]map[hcl.Range]string{}
	for _, m := range p.Matrices {
		ranges := map[hcl.Range]string{}
		for _, a := range m.Arms {
			for _, tr := range a.Target.Variables() {
				ranges[tr.SourceRange()] = a.Name
			}
		}
		armOf[m.ID()] = ranges
	}
	parallelFor(n, 256, func(i int) {
		inst := p.Instances[i]
		for _, r := range e.refs[inst.entity] {
			if r.Entity == "each" || strings.HasPrefix(r.Entity, "var.") {
				continue
			}
			if inst.Arm != "" {
				arm, fromArm := armOf[inst.entity][r.Range]
				if _, isData := e.entities[r.Entity].(*DataBlock); isData && fromArm && arm != inst.Arm {
					continue
				}
			}
			add(inst, r)
		}
		if deps[i] == nil {
			deps[i] = map[string]bool{}
		}
		if inst.seqPrev != "" {
			if after[i] == nil {
				after[i] = map[string]bool{}
			}
			after[i][inst.seqPrev] = true
		}
	})
	var diags hcl.Diagnostics
	for _, d := range found {
		diags = append(diags, d...)
	}
	// Arms run in declared order: setup steps of an arm start after every block of
	// the previous arm has settled (whatever its outcome: an arm that stopped does
	// not stop the next one), and the arm's blocks wait for its setup steps.
	for _, s := range setups {
		setupRefs, d := e.traversalRefs(s.arm.Setup, false)
		diags = append(diags, d...)
		var setupInsts []*Instance
		for _, r := range setupRefs {
			for _, x := range byEntity[r.Entity] {
				if r.Key == nil || x.Key == *r.Key {
					setupInsts = append(setupInsts, x)
				}
			}
		}
		for _, blk := range byEntity[s.matrix] {
			if blk.Arm == s.arm.Name {
				for _, si := range setupInsts {
					deps[blk.Index][si.Addr] = true
				}
			}
			if s.prevArm != "" && blk.Arm == s.prevArm {
				for _, si := range setupInsts {
					if after[si.Index] == nil {
						after[si.Index] = map[string]bool{}
					}
					after[si.Index][blk.Addr] = true
				}
			}
		}
	}
	parallelFor(n, 256, func(i int) {
		inst := p.Instances[i]
		for a := range deps[i] {
			inst.DependsOn = append(inst.DependsOn, a)
		}
		sort.Strings(inst.DependsOn)
		for a := range after[i] {
			if !deps[i][a] {
				inst.After = append(inst.After, a)
			}
		}
		sort.Strings(inst.After)
	})
	return diags
}

// Graph returns the instance dependency graph (edges run from a dependency to the
// instance that waits for it).
func (p *Plan) Graph() (graph.Graph[string, *Instance], error) {
	g := graph.New(func(i *Instance) string { return i.Addr }, graph.Directed(), graph.Acyclic())
	for _, inst := range p.Instances {
		if err := g.AddVertex(inst); err != nil {
			return nil, err
		}
	}
	for _, inst := range p.Instances {
		for _, d := range inst.Predecessors() {
			if err := g.AddEdge(d, inst.Addr); err != nil {
				return nil, fmt.Errorf("edge %s -> %s: %w", d, inst.Addr, err)
			}
		}
	}
	return g, nil
}

// runOrder is Kahn's algorithm with a priority queue on declaration index: among the
// steps whose dependencies are done, the one declared first runs first.
func (p *Plan) runOrder() ([]*Instance, hcl.Diagnostics) {
	// Instances are counted by Index, their place in p.Instances (placeOrder).
	indeg := make([]int, len(p.Instances))
	children := make([][]*Instance, len(p.Instances))
	for _, inst := range p.Instances {
		for _, preds := range [][]string{inst.DependsOn, inst.After} {
			for _, d := range preds {
				indeg[inst.Index]++
				// An address no instance has keeps inst waiting: a cycle's diagnostic
				// names it rather than a panic.
				if pred := p.byAddr[d]; pred != nil {
					children[pred.Index] = append(children[pred.Index], inst)
				}
			}
		}
	}
	q := &indexHeap{}
	for _, inst := range p.Instances {
		if indeg[inst.Index] == 0 {
			heap.Push(q, inst)
		}
	}
	out := make([]*Instance, 0, len(p.Instances))
	for q.Len() > 0 {
		inst := heap.Pop(q).(*Instance)
		out = append(out, inst)
		for _, c := range children[inst.Index] {
			indeg[c.Index]--
			if indeg[c.Index] == 0 {
				heap.Push(q, c)
			}
		}
	}
	if len(out) != len(p.Instances) {
		var stuck []string
		var rng hcl.Range
		for _, inst := range p.Instances {
			if indeg[inst.Index] > 0 {
				stuck = append(stuck, inst.Addr)
				if rng.Filename == "" {
					rng = inst.DeclRange
				}
			}
		}
		if len(stuck) > 6 {
			stuck = append(stuck[:6], fmt.Sprintf("and %d more", len(stuck)-6))
		}
		return nil, hcl.Diagnostics{errorAt(rng, "Dependency cycle",
			"These steps wait on each other through matrix arm setup ordering: %s. A setup step must not depend on a block of a later arm.", strings.Join(stuck, ", "))}
	}
	return out, nil
}

type indexHeap []*Instance

func (h indexHeap) Len() int           { return len(h) }
func (h indexHeap) Less(i, j int) bool { return h[i].Index < h[j].Index }
func (h indexHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *indexHeap) Push(x any)        { *h = append(*h, x.(*Instance)) }
func (h *indexHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// exprText is an expression as written, its whitespace collapsed: what a plan shows
// for a condition and the reason a skipped step gives.
func (p *Plan) exprText(x hcl.Expression) string {
	if x == nil {
		return ""
	}
	rng := x.Range()
	f, ok := p.Files()[rng.Filename]
	if !ok || rng.End.Byte > len(f.Bytes) || rng.Start.Byte > rng.End.Byte {
		return ""
	}
	return strings.Join(strings.Fields(string(f.Bytes[rng.Start.Byte:rng.End.Byte])), " ")
}

// resolveDuring resolves each during meta-argument to the address of one block
// instance: the expression is evaluated with step.* standing for instance addresses,
// so for_each can choose the block (step.block.primary["${each.key}/c4/r1"]). A
// capture starts when its block may start, so it takes on the block's dependencies;
// the engine starts it once the block runs.
func (p *Plan) resolveDuring(ctx0 *hcl.EvalContext) hcl.Diagnostics {
	var diags hcl.Diagnostics
	// The namespace of addresses is built only for a plan with a during: it holds a
	// value per instance.
	if !slices.ContainsFunc(p.Instances, func(inst *Instance) bool { return inst.during != nil }) {
		return nil
	}
	addrs := p.ev.instanceObject(func(inst *Instance) cty.Value { return cty.StringVal(inst.Addr) }, nil)
	for _, inst := range p.Instances {
		if inst.during == nil {
			continue
		}
		vars := make(map[string]cty.Value, len(ctx0.Variables))
		for k, v := range ctx0.Variables {
			vars[k] = v
		}
		vars["step"] = addrs
		ctx := &hcl.EvalContext{Variables: vars, Functions: ctx0.Functions}
		if inst.each != cty.NilVal {
			ctx = withEach(ctx, inst.Key, inst.each)
		}
		v, d := inst.during.Value(ctx)
		rng := inst.during.Range()
		if d.HasErrors() {
			diags = append(diags, errorAt(rng, "Invalid during", "during must name one block instance, such as step.block.primary[\"incumbent_before/c4/r1\"]: %s", d.Error()))
			continue
		}
		v, _ = v.Unmark()
		if !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			diags = append(diags, errorAt(rng, "Invalid during", "during must name one block instance, such as step.block.primary[\"incumbent_before/c4/r1\"], not a whole step or another value."))
			continue
		}
		host, ok := p.byAddr[v.AsString()]
		if !ok || host.Type != "block" {
			diags = append(diags, errorAt(rng, "Invalid during", "%s is not a block: a capture runs during a block of requests.", v.AsString()))
			continue
		}
		for _, d := range host.Predecessors() {
			if d == inst.Addr {
				diags = append(diags, errorAt(rng, "Invalid during", "%s waits for %s, so %s cannot run during it.", host.Addr, inst.Addr, inst.Addr))
			}
		}
		if d := p.checkDuringTarget(inst, host, ctx0); d != nil {
			diags = append(diags, d)
		}
		inst.Meta.During = host.Addr
		seen := map[string]bool{}
		for _, d := range inst.DependsOn {
			seen[d] = true
		}
		for _, d := range host.DependsOn {
			if !seen[d] && d != inst.Addr {
				inst.DependsOn = append(inst.DependsOn, d)
			}
		}
		sort.Strings(inst.DependsOn)
	}
	return diags
}
