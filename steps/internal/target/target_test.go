package target

import (
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// A sim target without a model serves its profile's name, but its declared Model,
// which goes into the simulator's spec and digest, stays empty: a container made
// before is still the same spec.
func TestServedModelOfASimTarget(t *testing.T) {
	prof, _ := sim.LookupProfile("incumbent")
	tgt, err := FromValue(cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("inc"), "profile": cty.StringVal("incumbent"), "endpoint": cty.StringVal("http://127.0.0.1:1")}))
	if err != nil {
		t.Fatal(err)
	}
	if tgt.Model != "" || tgt.ServedModel() != prof.ServedModelName {
		t.Errorf("Model %q, ServedModel %q; want empty and %q", tgt.Model, tgt.ServedModel(), prof.ServedModelName)
	}
	named, err := FromValue(cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("inc"), "profile": cty.StringVal("incumbent"), "model": cty.StringVal("m"), "endpoint": cty.StringVal("http://127.0.0.1:1")}))
	if err != nil {
		t.Fatal(err)
	}
	if named.ServedModel() != "m" {
		t.Errorf("ServedModel %q, want the declared m", named.ServedModel())
	}
}
