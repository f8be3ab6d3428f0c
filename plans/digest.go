package plans

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// blockRange is the whole source of a block, header to closing brace.
func blockRange(b *hcl.Block) hcl.Range {
	if body, ok := b.Body.(*hclsyntax.Body); ok {
		return hcl.RangeBetween(b.DefRange, body.SrcRange)
	}
	return b.DefRange
}

// sourceDigests gives every step and matrix a digest of the source text that
// defines it: its own block, the blocks of every host, target, workload or gate it
// reaches, and the values of the variables it reads. A value that is unknown at
// plan time hides its expression from the canonical configuration; the digest puts
// the expression back under the plan hash, so editing `min(48, ...)` or a variable
// that only feeds a step output still changes the frozen plan.
func (e *evaluator) sourceDigests() map[string]string {
	files := e.plan.parser.Files()
	text := func(r hcl.Range) []byte {
		f := files[r.Filename]
		if f == nil || r.End.Byte > len(f.Bytes) || r.Start.Byte > r.End.Byte {
			return nil
		}
		return f.Bytes[r.Start.Byte:r.End.Byte]
	}
	out := map[string]string{}
	for id, ent := range e.entities {
		var own hcl.Range
		switch x := ent.(type) {
		case *StepBlock:
			own = x.SrcRange
		case *Matrix:
			own = x.SrcRange
		default:
			continue
		}
		seen := map[string]bool{}
		var reached []string
		var walk func(id string)
		walk = func(id string) {
			for _, r := range e.refs[id] {
				if seen[r.Entity] {
					continue
				}
				seen[r.Entity] = true
				if _, ok := e.entities[r.Entity].(*DataBlock); ok {
					reached = append(reached, r.Entity)
					walk(r.Entity)
				}
				if _, ok := e.entities[r.Entity].(*Variable); ok {
					reached = append(reached, r.Entity)
				}
			}
		}
		walk(id)
		sort.Strings(reached)
		h := sha256.New()
		h.Write(text(own))
		for _, dep := range reached {
			h.Write([]byte{0})
			h.Write([]byte(dep))
			switch x := e.entities[dep].(type) {
			case *DataBlock:
				h.Write(text(x.SrcRange))
			case *Variable:
				b, _ := CanonicalJSON(CanonicalValue(x.Value))
				h.Write(b)
			}
		}
		out[id] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}
