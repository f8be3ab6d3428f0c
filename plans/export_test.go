package plans

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// AttrSpecOf is attrSpecOf, for the test that every real step argument is one.
func AttrSpecOf(sp hcldec.Spec) (*hcldec.AttrSpec, bool) { return attrSpecOf(sp) }

// ParseInPieces parses src as Load parses a large file: in pieces cut between
// top-level blocks, on every core, into one file whose syntax tree is kept. It is
// nil where Load would parse the file whole.
func ParseInPieces(src []byte, filename string) *hcl.File {
	cuts := topLevelCuts(src, pieceBytes)
	if len(cuts) == 0 {
		return nil
	}
	return parseChunks(src, filename, cuts)
}

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
