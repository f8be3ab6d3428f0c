package plans_test

import (
	"path/filepath"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/vocab"
	"github.com/zclconf/go-cty/cty"
)

// specType is a test-only step type: a fixed body schema and output type.
type specType struct {
	spec hcldec.ObjectSpec
	out  cty.Type
	refs map[string]plans.DataRef // the arguments that name data blocks, as the real types say
}

func (s specType) Spec() hcldec.ObjectSpec                  { return s.spec }
func (s specType) OutputType() cty.Type                     { return s.out }
func (s specType) DataReferences() map[string]plans.DataRef { return s.refs }

var _ plans.StepType = specType{}
var _ plans.DataReferrer = specType{}

// readsData is a step type that reads data blocks, as the real block step does: it
// hands the language the real vocabulary, so the tests check campaign values
// against the lists the simulator, corpus generator and scraper own.
type readsData struct{ specType }

func (readsData) Vocabulary() plans.Vocabulary { return vocab.Vocabulary() }

var _ plans.VocabularyProvider = readsData{}

func attr(name string, ty cty.Type, required bool) *hcldec.AttrSpec {
	return &hcldec.AttrSpec{Name: name, Type: ty, Required: required}
}

// testStepTypes is the registry every test in this package loads with. It mirrors the
// shape of the real step types without importing them (steps/ depends on engine/).
func testStepTypes() plans.StepTypes {
	targetOnly := specType{
		spec: hcldec.ObjectSpec{"target": attr("target", cty.DynamicPseudoType, true)},
		out:  cty.Object(map[string]cty.Type{"identity": cty.String}),
		refs: map[string]plans.DataRef{"target": {Kind: "target"}},
	}
	return plans.StepTypes{
		"block": readsData{specType{
			spec: hcldec.ObjectSpec{
				"target":   attr("target", cty.DynamicPseudoType, false),
				"workload": attr("workload", cty.DynamicPseudoType, false),
				// Range-checked as the real block step checks them.
				"concurrency":  &hcldec.ValidateSpec{Wrapped: attr("concurrency", cty.Number, false), Func: plans.WholeAtLeast("concurrency", 1)},
				"requests":     &hcldec.ValidateSpec{Wrapped: attr("requests", cty.Number, false), Func: plans.WholeAtLeast("requests", 1)},
				"repetition":   attr("repetition", cty.Number, false),
				"arm":          attr("arm", cty.String, false),
				"cell":         attr("cell", cty.String, false),
				"gates":        attr("gates", cty.DynamicPseudoType, false),
				"phase":        attr("phase", cty.String, false),
				"primed":       attr("primed", cty.Bool, false),
				"reset_cache":  attr("reset_cache", cty.Bool, false),
				"expect_cache": attr("expect_cache", cty.String, false),
				"corpus_seed":  attr("corpus_seed", cty.Number, false),
				"agents":       attr("agents", cty.List(cty.String), false),
			},
			out: cty.Object(map[string]cty.Type{
				"seconds_per_request": cty.Number,
				"concurrency":         cty.Number,
				"requests":            cty.Number,
			}),
			refs: map[string]plans.DataRef{"target": {Kind: "target"}, "workload": {Kind: "workload"}, "gates": {Kind: "gate", List: true}},
		}},
		"freeze": specType{
			spec: hcldec.ObjectSpec{"values": attr("values", cty.DynamicPseudoType, true)},
			out:  cty.Object(map[string]cty.Type{"values": cty.DynamicPseudoType}),
		},
		"exec": specType{
			spec: hcldec.ObjectSpec{"command": attr("command", cty.List(cty.String), true)},
			out:  cty.Object(map[string]cty.Type{"exit_code": cty.Number}),
		},
		"deploy":  targetOnly,
		"restore": targetOnly,
	}
}

// TestRealStepSpecsAreAttributes: Load checks a step block against its type's
// implied schema alone (decodeStepBlock), which is all hcldec checks while every
// argument is an attribute. A nested block spec would need its own check there.
func TestRealStepSpecsAreAttributes(t *testing.T) {
	for name, st := range steps.Registry().Types() {
		for arg, spec := range st.Spec() {
			if _, ok := plans.AttrSpecOf(spec); !ok {
				t.Errorf("step type %q argument %q is a %T, not an attribute", name, arg, spec)
			}
		}
	}
}

// TestSourcesFromConfigurations: reading whether an argument is known from the
// instance's configuration gives the source parts evaluating it again gives, on
// campaigns whose arguments wait for builds, pilots and freezes.
func TestSourcesFromConfigurations(t *testing.T) {
	for _, path := range []string{"../examples/flare-wave1", "../examples/docker-local/campaign.hcl", "../examples/quickstart/campaign.hcl", seedPath} {
		p := mustLoad(t, path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
		if bad := plans.SourceMismatches(p); len(bad) > 0 {
			t.Errorf("%s: source parts differ for %v", path, bad)
		}
	}
}

// TestSourcesOfAnObjectArgument: an argument of an object type is converted to
// that type, which drops an attribute the type does not have, unknown or not; its
// source part still names the unknown it was written with.
func TestSourcesOfAnObjectArgument(t *testing.T) {
	types := testStepTypes()
	types["shaped"] = specType{
		spec: hcldec.ObjectSpec{"shape": attr("shape", cty.Object(map[string]cty.Type{"a": cty.Number}), true)},
		out:  cty.EmptyObject,
	}
	dir := writeFiles(t, map[string]string{"c.hcl": `
campaign "c" {
  outage {
    budget  = "1h"
    reserve = "10m"
  }
}
step "freeze" "x" {
  values = { v = 1 }
}
step "shaped" "s" {
  shape = { a = 1, later = step.freeze.x.values }
}
`})
	p := mustLoad(t, filepath.Join(dir, "c.hcl"), plans.Options{StepTypes: types})
	if bad := plans.SourceMismatches(p); len(bad) > 0 {
		t.Errorf("source parts differ for %v", bad)
	}
}
