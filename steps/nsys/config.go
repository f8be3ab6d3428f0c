package nsys

import (
	"fmt"
	"math/big"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// The attributes the report reads: checked when the plan is loaded, so a bad pattern
// or a control that is not a block is a diagnostic at its range, never a surprise in
// the report.
//
//	modules      = { moe = ["W4A16FusedMoe"], nccl = ["^nccl"] }  # RE2, on kernel names
//	rank_devices = [0, 1]                                         # CUDA device of rank 0, 1
//	control      = step.block.primary["flare_instrumented/c4/r2"] # the unprofiled control

// blockOutputs are attributes every block step's outputs carry: how control tells a
// block from any other value.
var blockOutputs = []string{"aggregate_output_tok_s", "seconds_per_request", "concurrency"}

func validateModules(v cty.Value) hcl.Diagnostics {
	m, ok := modulesOf(v)
	if !ok {
		return nil
	}
	if _, err := CompileModules(m); err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid module mapping", Detail: fmt.Sprintf("modules: %v. Patterns are RE2 regular expressions matched against kernel names.", err)}}
	}
	return nil
}

// modulesOf converts a known modules value; ok is false while it is unknown or null.
func modulesOf(v cty.Value) (map[string][]string, bool) {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil, false
	}
	out := map[string][]string{}
	for k, l := range v.AsValueMap() {
		var ps []string
		if !l.IsNull() {
			for _, p := range l.AsValueSlice() {
				ps = append(ps, p.AsString())
			}
		}
		out[k] = ps
	}
	return out, true
}

func validateRankDevices(v cty.Value) hcl.Diagnostics {
	v, _ = v.UnmarkDeep()
	if v.IsNull() || !v.IsWhollyKnown() {
		return nil
	}
	bad := func(f string, args ...any) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid rank devices", Detail: "rank_devices: " + fmt.Sprintf(f, args...) + `; list the CUDA device of each rank in rank order, e.g. [0, 1].`}}
	}
	seen := map[int64]bool{}
	for i, x := range v.AsValueSlice() {
		d, acc := x.AsBigFloat().Int64()
		if acc != big.Exact || d < 0 {
			return bad("element %d (%s) is not a device number", i, x.AsBigFloat().String())
		}
		if seen[d] {
			return bad("device %d is listed twice", d)
		}
		seen[d] = true
	}
	return nil
}

func validateControl(v cty.Value) hcl.Diagnostics {
	if v.IsNull() {
		return nil
	}
	bad := func(detail string) hcl.Diagnostics {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Invalid control block", Detail: detail + ` Name the unprofiled control block by reference, e.g. control = step.block.primary["flare_instrumented/c4/r2"].`}}
	}
	ty := v.Type()
	if !ty.IsObjectType() {
		return bad(fmt.Sprintf("control is a %s, not a block step's outputs.", ty.FriendlyName()))
	}
	for _, a := range blockOutputs {
		if !ty.HasAttribute(a) {
			return bad("control is not a block step (its value has no " + a + ").")
		}
	}
	if v.IsKnown() {
		return nil // the run-time value: the block's outputs
	}
	if addrs := controlAddrs(v); len(addrs) != 1 {
		return bad(fmt.Sprintf("control waits on %d steps (%s); it names exactly one block.", len(addrs), strings.Join(addrs, ", ")))
	}
	return nil
}

// controlAddrs lists the steps a plan-time control value waits for, without the
// "step." prefix of a reference.
func controlAddrs(v cty.Value) []string {
	var out []string
	for m := range v.Marks() {
		if k, ok := m.(plans.KnownAfter); ok {
			out = append(out, strings.TrimPrefix(string(k), "step."))
		}
	}
	return out
}

// ControlAddr is the address of the control block a plan-time configuration names,
// "" when it names none.
func ControlAddr(planConfig cty.Value) string {
	if planConfig == cty.NilVal || !planConfig.Type().IsObjectType() || !planConfig.Type().HasAttribute("control") {
		return ""
	}
	if a := controlAddrs(planConfig.GetAttr("control")); len(a) == 1 {
		return a[0]
	}
	return ""
}

// MappingFromPlan reads modules and rank_devices from a step's configuration as the
// canonical plan (plan.json) records it.
func MappingFromPlan(config map[string]any) (Mapping, error) {
	var m Mapping
	if raw, ok := config["modules"].(map[string]any); ok {
		mods := map[string][]string{}
		for k, l := range raw {
			xs, _ := l.([]any)
			for _, x := range xs {
				s, _ := x.(string)
				mods[k] = append(mods[k], s)
			}
		}
		var err error
		if m.Modules, err = CompileModules(mods); err != nil {
			return m, err
		}
	}
	if raw, ok := config["rank_devices"].([]any); ok {
		m.RankDevices = []int{}
		for _, x := range raw {
			var d int
			if _, err := fmt.Sscan(fmt.Sprint(x), &d); err != nil {
				return m, fmt.Errorf("rank_devices: %v is not a device number", x)
			}
			m.RankDevices = append(m.RankDevices, d)
		}
	}
	return m, nil
}
