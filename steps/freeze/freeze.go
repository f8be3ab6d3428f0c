package freeze

import (
	"context"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// Step records values.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}
var _ engine.RerunSafe = Step{}

var spec = hcldec.ObjectSpec{
	"values": &hcldec.AttrSpec{Name: "values", Type: cty.DynamicPseudoType, Required: true},
}

// Spec is the schema of a freeze step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType exposes the recorded values as step.freeze.NAME.values.
func (Step) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"values": cty.DynamicPseudoType})
}

// DefaultTimeout bounds a step that only computes, so the outage clock can count it.
func (Step) DefaultTimeout() time.Duration { return time.Minute }

// RerunSafe: recomputing the values after an interrupted attempt sends nothing and
// gives the same values from the same inputs.
func (Step) RerunSafe() bool { return true }

// Run writes values.json and returns the values as outputs.
func (Step) Run(_ context.Context, sc *engine.StepContext) engine.Result {
	v := sc.Config.GetAttr("values")
	b, err := plans.CanonicalJSON(plans.CanonicalValue(v))
	if err != nil {
		return engine.Failed(engine.ClassInternal, "encode values: %v", err)
	}
	if err := os.WriteFile(sc.Path("values.json"), b, 0o644); err != nil {
		return engine.Failed(engine.ClassInternal, "write values.json: %v", err)
	}
	sc.Log.Info().RawJSON("values", b[:len(b)-1]).Msg("values frozen")
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{"values": v}))
}
