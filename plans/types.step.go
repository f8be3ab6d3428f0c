package plans

import (
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// Meta-argument names accepted on every step, whatever its type.
const (
	metaDependsOn = "depends_on"
	metaForEach   = "for_each"
	metaTimeout   = "timeout"
	metaUses      = "uses"
	metaAlways    = "always"
	metaPhase     = "phase"
	metaOnFailure = "on_failure"
	metaOutage    = "outage"
	metaRerunSafe = "rerun_safe"
	// condition is evaluated when the step could start, over the outcomes of the
	// steps and arms it names (outcome.TYPE.NAME, outcome.arm.MATRIX.ARM): false
	// skips the step.
	metaCondition = "condition"
	// during names the block instance a capture runs under; start_after and
	// start_after_requests say when, counted from the block's first request.
	metaDuring             = "during"
	metaStartAfter         = "start_after"
	metaStartAfterRequests = "start_after_requests"
	// count repeats a step (each for_each instance) N times; sequential makes each
	// instance of the step start after the one before it, in instance order. With
	// both, three short captures per concurrency, each under its own block, take
	// one step block each.
	metaCount      = "count"
	metaSequential = "sequential"
)

// maxCount bounds count so that a typo is a diagnostic, not an hour of expansion.
const maxCount = 1000

var metaSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: metaDependsOn}, {Name: metaForEach}, {Name: metaTimeout}, {Name: metaUses},
		{Name: metaAlways}, {Name: metaPhase}, {Name: metaOnFailure}, {Name: metaOutage},
		{Name: metaRerunSafe}, {Name: metaCondition}, {Name: metaDuring}, {Name: metaStartAfter},
		{Name: metaStartAfterRequests}, {Name: metaCount}, {Name: metaSequential},
	},
}

// Phases a step may declare. Only measured blocks enter statistics.
var validPhases = []string{"setup", "pilot", "priming", "measured", "diagnostic", "restore"}

// Meta holds the evaluated meta-arguments of a step instance.
type Meta struct {
	Timeout   time.Duration // hard bound; zero means the step type's default
	Uses      []string      // exclusive resources; steps sharing one never overlap
	Always    bool          // runs after success, failure, stop, interrupt or deferral
	Phase     string
	OnFailure string // "", "stop", "stop_arm", "hold" or "continue": overrides the failure class policy
	// OnFailureByClass overrides the policy of single failure classes
	// (on_failure = { health = "hold" }); a class it does not name keeps its default.
	OnFailureByClass map[string]string
	Outage           string // "", "begin" or "end"
	// RerunSafe says the step may run again as a new attempt after an attempt of it
	// was interrupted (a crash, a signal); without it an interrupted step stays
	// interrupted and is never re-sent.
	RerunSafe bool
	// Condition, when set, is evaluated before the step starts, with outcome.* in
	// scope; false settles the step as skipped with ConditionText as the reason.
	Condition     hcl.Expression
	ConditionText string
	// During is the address of the block instance this step runs under: it starts
	// while that block runs (StartAfter after the block's first request, or once
	// StartAfterRequests of its requests completed) and must overlap it.
	During             string
	StartAfter         time.Duration
	StartAfterRequests int
}

// StartCondition says in words when a capture with During starts.
func (m Meta) StartCondition() string {
	switch {
	case m.StartAfterRequests > 0:
		return fmt.Sprintf("after %d completed requests", m.StartAfterRequests)
	case m.StartAfter > 0:
		return fmt.Sprintf("%s after the first request", m.StartAfter)
	}
	return "at the first request"
}

// OnFailure values a step may declare.
var onFailureValues = []string{"stop", "continue", "hold", "stop_arm"}

// OnFailureFor is the on_failure value that applies to a failure of class: the
// class's own, else the step's single value ("" = the class's default policy).
func (m Meta) OnFailureFor(class string) string {
	if v, ok := m.OnFailureByClass[class]; ok {
		return v
	}
	return m.OnFailure
}

// StepBlock is a step block before expansion.
type StepBlock struct {
	Type, Name string
	Order      int
	DeclRange  hcl.Range
	SrcRange   hcl.Range
	ForEach    hcl.Expression
	Count      hcl.Expression // nil: one instance per for_each key (or one)
	Sequential hcl.Expression
	MetaAttrs  hcl.Attributes
	Body       hcl.Body // the type-specific remainder, decoded with the type's Spec
	StepType   StepType
	// content is Body's content under the type's schema, with its diagnostics:
	// the same for every instance, which decodes it in its own context
	// (decodedBody) instead of asking the body for it again.
	content      *hcl.BodyContent
	contentDiags hcl.Diagnostics
}

// Keyed says the step's instances have keys (for_each or count), so each.key and
// each.value exist in its body.
func (s *StepBlock) Keyed() bool { return s.ForEach != nil || s.Count != nil }

// ID is how references name the block: step.TYPE.NAME.
func (s *StepBlock) ID() string { return "step." + s.Type + "." + s.Name }

func decodeStepBlock(b *hcl.Block, types StepTypes, order int) (*StepBlock, hcl.Diagnostics) {
	s := &StepBlock{Type: b.Labels[0], Name: b.Labels[1], Order: order, DeclRange: b.DefRange, SrcRange: blockRange(b)}
	var diags hcl.Diagnostics
	st, ok := types[s.Type]
	if !ok {
		diags = append(diags, errorAt(b.LabelRanges[0], "Unknown step type",
			"There is no step type %q.%s Registered step types: %s.", s.Type, didYouMean(s.Type, types.Names()), strings.Join(types.Names(), ", ")))
		return nil, diags
	}
	s.StepType = st
	content, remain, d := b.Body.PartialContent(metaSchema)
	diags = append(diags, d...)
	s.MetaAttrs = content.Attributes
	s.ForEach = nil
	if a, ok := content.Attributes[metaForEach]; ok {
		s.ForEach = a.Expr
	}
	if a, ok := content.Attributes[metaCount]; ok {
		s.Count = a.Expr
	}
	if a, ok := content.Attributes[metaSequential]; ok {
		s.Sequential = a.Expr
	}
	s.Body = remain
	// Check the body against the type's schema to report unknown or missing
	// arguments at load time, with the list of what the type accepts. Only the
	// schema: evaluation waits for expansion, which decodes every instance. Step
	// types' specs are attributes, so the implied schema yields every schema
	// diagnostic hcldec reports.
	s.content, s.contentDiags = remain.Content(hcldec.ImpliedSchema(st.Spec()))
	if sd := s.contentDiags; sd.HasErrors() {
		for _, sdiag := range sd {
			if sdiag.Summary == "Unsupported argument" || sdiag.Summary == "Missing required argument" || sdiag.Summary == "Unsupported block type" {
				diags = append(diags, sdiag)
			}
		}
		diags = listValid(diags, fmt.Sprintf("step type %q", s.Type), append(specNames(st.Spec()), attrNames(metaSchema)...))
	}
	return s, diags
}

func specNames(spec hcldec.ObjectSpec) []string {
	var out []string
	for name := range spec {
		out = append(out, name)
	}
	return out
}

func attrNames(s *hcl.BodySchema) []string {
	var out []string
	for _, a := range s.Attributes {
		out = append(out, a.Name)
	}
	return out
}

// badPolicy is the diagnostic of an on_failure value that is no policy.
func badPolicy(rng hcl.Range, s string) *hcl.Diagnostic {
	return errorAt(rng, "Invalid on_failure",
		"on_failure must be \"stop\" (stop the campaign), \"stop_arm\" (stop this matrix arm), \"hold\" (restore, then hold for review) or \"continue\" (record and go on), not %q.%s", s, didYouMean(s, onFailureValues))
}

func isObjectCons(x hcl.Expression) bool {
	_, ok := x.(*hclsyntax.ObjectConsExpr)
	return ok
}

// decodeOnFailureByClass reads on_failure = { CLASS = "POLICY", ... }: each key
// one of classes (any name when the step types name none: EnumFailureClass), each
// value one of onFailureValues, each problem at its item.
func decodeOnFailureByClass(a *hcl.Attribute, ctx *hcl.EvalContext, classes []string, diags hcl.Diagnostics) (map[string]string, hcl.Diagnostics) {
	out := map[string]string{}
	for _, item := range a.Expr.(*hclsyntax.ObjectConsExpr).Items {
		k, d := metaValue(metaOnFailure, item.KeyExpr, ctx)
		diags = append(diags, d...)
		v, d2 := metaValue(metaOnFailure, item.ValueExpr, ctx)
		diags = append(diags, d2...)
		if d.HasErrors() || d2.HasErrors() {
			continue
		}
		k, _ = k.Unmark()
		v, _ = v.Unmark()
		if k.Type() != cty.String || !k.IsKnown() || k.IsNull() || v.Type() != cty.String || !v.IsKnown() || v.IsNull() {
			diags = append(diags, errorAt(item.ValueExpr.Range(), "Incorrect attribute value type", "on_failure maps a failure class to a policy, both strings known at plan time."))
			continue
		}
		class, policy := k.AsString(), v.AsString()
		if len(classes) > 0 && !contains(classes, class) {
			diags = append(diags, errorAt(item.KeyExpr.Range(), "Unknown failure class",
				"on_failure names class %q, which no step fails with.%s The classes: %s.", class, didYouMean(class, classes), strings.Join(classes, ", ")))
			continue
		}
		if !contains(onFailureValues, policy) {
			diags = append(diags, badPolicy(item.ValueExpr.Range(), policy))
			continue
		}
		out[class] = policy
	}
	return out, diags
}

// decodeMeta evaluates the meta-arguments of one instance. They must be known at
// plan time: the schedule cannot depend on what a step will produce. classes are
// the failure classes on_failure may name (EnumFailureClass).
func decodeMeta(attrs hcl.Attributes, ctx *hcl.EvalContext, classes []string) (Meta, hcl.Diagnostics) {
	var m Meta
	var diags hcl.Diagnostics
	str := func(name string) (string, bool) {
		a, ok := attrs[name]
		if !ok {
			return "", false
		}
		v, d := metaValue(name, a.Expr, ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return "", false
		}
		if !IsWholeKnown(v) {
			diags = append(diags, errorAt(a.Expr.Range(), "Value must be known at plan time", "%s %s; the schedule cannot wait for a step's outputs.", name, UnknownText(markOf(v))))
			return "", false
		}
		v, _ = v.Unmark()
		if v.Type() != cty.String || v.IsNull() {
			diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a string.", name))
			return "", false
		}
		return v.AsString(), true
	}
	if s, ok := str(metaTimeout); ok {
		d, err := ParseDuration(s)
		switch {
		case err != nil:
			diags = append(diags, errorAt(attrs[metaTimeout].Expr.Range(), "Invalid duration", "timeout: %s.", err))
		case d <= 0:
			// A zero bound would end the step before it starts; no timeout means
			// the step type's default.
			diags = append(diags, errorAt(attrs[metaTimeout].Expr.Range(), "Invalid duration", "timeout %q: want a positive duration such as \"10m\", or no timeout for the step type's default.", s))
		}
		m.Timeout = d
	}
	if s, ok := str(metaPhase); ok {
		if !contains(validPhases, s) {
			diags = append(diags, errorAt(attrs[metaPhase].Expr.Range(), "Invalid phase", "phase %q is not one of %s.%s", s, strings.Join(validPhases, ", "), didYouMean(s, validPhases)))
		}
		m.Phase = s
	}
	if a, ok := attrs[metaOnFailure]; ok && isObjectCons(a.Expr) {
		m.OnFailureByClass, diags = decodeOnFailureByClass(a, ctx, classes, diags)
	} else if s, ok := str(metaOnFailure); ok {
		if !contains(onFailureValues, s) {
			diags = append(diags, badPolicy(attrs[metaOnFailure].Expr.Range(), s))
		}
		m.OnFailure = s
	}
	if a, ok := attrs[metaCondition]; ok {
		m.Condition = a.Expr
	}
	if s, ok := str(metaStartAfter); ok {
		d, err := ParseDuration(s)
		if err != nil || d <= 0 {
			diags = append(diags, errorAt(attrs[metaStartAfter].Expr.Range(), "Invalid duration", "start_after must be a positive duration such as \"2s\"."))
		}
		m.StartAfter = d
	}
	if a, ok := attrs[metaStartAfterRequests]; ok {
		v, d := metaValue(metaStartAfterRequests, a.Expr, ctx)
		diags = append(diags, d...)
		if !d.HasErrors() {
			v, _ = v.Unmark()
			n, acc := 0, false
			if v.Type() == cty.Number && v.IsKnown() && !v.IsNull() {
				i, a := v.AsBigFloat().Int64()
				n, acc = int(i), a == big.Exact
			}
			if !acc || n < 1 {
				diags = append(diags, errorAt(a.Expr.Range(), "Invalid start_after_requests", "start_after_requests must be a whole number of requests, at least 1."))
			}
			m.StartAfterRequests = n
		}
	}
	if s, ok := str(metaOutage); ok {
		if s != "begin" && s != "end" {
			diags = append(diags, errorAt(attrs[metaOutage].Expr.Range(), "Invalid outage marker", "outage must be \"begin\" or \"end\", not %q.", s))
		}
		m.Outage = s
	}
	boolean := func(name string, dst *bool) {
		a, ok := attrs[name]
		if !ok {
			return
		}
		v, d := metaValue(name, a.Expr, ctx)
		diags = append(diags, d...)
		if d.HasErrors() {
			return
		}
		v, _ = v.Unmark()
		if v.Type() != cty.Bool || v.IsNull() || !v.IsKnown() {
			diags = append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be true or false.", name))
			return
		}
		*dst = v.True()
	}
	boolean(metaAlways, &m.Always)
	boolean(metaRerunSafe, &m.RerunSafe)
	if a, ok := attrs[metaUses]; ok {
		m.Uses, diags = stringList(a, ctx, diags)
	}
	return m, diags
}

// metaValue evaluates a meta-argument. The plan shows each as it is (plan show,
// plan.json) and diagnostics quote it, so one built from a sensitive value is
// refused before anything reads it.
func metaValue(name string, x hcl.Expression, ctx *hcl.EvalContext) (cty.Value, hcl.Diagnostics) {
	v, diags := x.Value(ctx)
	if !diags.HasErrors() && hasSensitive(v) {
		return cty.NilVal, append(diags, errorAt(x.Range(), "Sensitive value in a public argument",
			"%s is built from a sensitive value. A step's %s is shown as it is in the plan (plan show, plan.json), so it cannot hold a secret.", name, name))
	}
	return v, diags
}

func stringList(a *hcl.Attribute, ctx *hcl.EvalContext, diags hcl.Diagnostics) ([]string, hcl.Diagnostics) {
	v, d := metaValue(a.Name, a.Expr, ctx)
	diags = append(diags, d...)
	if d.HasErrors() {
		return nil, diags
	}
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsWhollyKnown() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		return nil, append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a list of strings known at plan time.", a.Name))
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		if e.Type() != cty.String || e.IsNull() {
			return nil, append(diags, errorAt(a.Expr.Range(), "Incorrect attribute value type", "%s must be a list of strings.", a.Name))
		}
		out = append(out, e.AsString())
	}
	return out, diags
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// MarksOf collects every mark found anywhere in v (UnknownText reads which steps a
// value waits for from them).
func MarksOf(v cty.Value) cty.ValueMarks { return markOf(v) }

func markOf(v cty.Value) cty.ValueMarks {
	_, pvm := v.UnmarkDeepWithPaths()
	marks := make(cty.ValueMarks)
	for _, p := range pvm {
		for m := range p.Marks {
			marks[m] = struct{}{}
		}
	}
	return marks
}

// checkDuringTarget refuses a capture whose target is not its block's: a capture
// "under load" on another target observes a server that the block never loads.
// Targets known at plan time are compared by name; one that waits for a step, or a
// capture without a target, is not checked.
func (p *Plan) checkDuringTarget(capture, block *Instance, ctx0 *hcl.EvalContext) *hcl.Diagnostic {
	capTarget, capRange, ok := p.targetOf(capture, ctx0)
	if !ok {
		return nil
	}
	blockTarget, _, ok := p.targetOf(block, ctx0)
	if !ok || capTarget == blockTarget {
		return nil
	}
	return errorAt(capRange, "Invalid during",
		"%s runs during %s, which sends its requests to target.%s, but its own target is target.%s: a capture under load observes the target its block loads. Set target = target.%s, or run the capture during a block of target.%s.",
		capture.Addr, block.Addr, blockTarget, capTarget, blockTarget, capTarget)
}

// targetOf is the name of the target an instance names and the range of the
// expression naming it; ok is false when it names none or one not known at plan
// time.
func (p *Plan) targetOf(inst *Instance, ctx0 *hcl.EvalContext) (string, hcl.Range, bool) {
	var expr hcl.Expression
	switch x := p.ev.entities[inst.entity].(type) {
	case *Matrix:
		for _, a := range x.Arms {
			if a.Name == inst.Arm {
				expr = a.Target
			}
		}
	case *StepBlock:
		content, _, _ := x.Body.PartialContent(&hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "target"}}})
		if a := content.Attributes["target"]; a != nil {
			expr = a.Expr
		}
	}
	if expr == nil {
		return "", hcl.Range{}, false
	}
	ctx := ctx0
	if inst.each != cty.NilVal {
		ctx = withEach(ctx0, inst.Key, inst.each)
	}
	v, d := expr.Value(ctx)
	if d.HasErrors() {
		return "", hcl.Range{}, false
	}
	name := knownString(v, "name")
	return name, expr.Range(), name != ""
}
