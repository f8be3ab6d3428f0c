package plans

import (
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// AttrSpecOf is attrSpecOf, for the test that every real step argument is one.
func AttrSpecOf(sp hcldec.Spec) (*hcldec.AttrSpec, bool) { return attrSpecOf(sp) }

// SourceMismatches digests every step instance of p twice, reading what is known
// from its configuration and evaluating each argument again, and returns the
// addresses where the two differ.
func SourceMismatches(p *Plan) []string {
	d := newSourceDigester(p, p.ev.planCtx)
	var out []string
	for _, inst := range p.Instances {
		if inst.checkConfig != nil {
			continue
		}
		v, diags := inst.evalConfig(p.ev.planCtx)
		if diags.HasErrors() {
			out = append(out, inst.Addr+" (does not evaluate)")
			continue
		}
		from, again := d.instance(inst, v), d.instance(inst, cty.NilVal)
		if len(from) != len(again) {
			out = append(out, inst.Addr)
			continue
		}
		for k, x := range from {
			if again[k] != x {
				out = append(out, inst.Addr)
				break
			}
		}
	}
	return out
}
