package plans

import (
	"github.com/hashicorp/hcl/v2"
)

const (
	blockLocals = "locals" // the block
	blockLocal  = "local"  // the reference root: local.NAME
)

// Local is one named value of a locals block, as in Terraform: an expression written
// once and read as local.NAME wherever a variable may be read. A local may name
// variables, other locals, hosts, targets, workloads, gates and step outputs; what
// it names becomes a dependency of whatever reads it, exactly as if the expression
// were written there. Locals are evaluated in dependency order, and a cycle between
// them is a diagnostic like any other.
//
//	locals {
//	  scale   = var.time_scale * 2
//	  windows = { budget = "90m", reserve = "20m" }
//	}
type Local struct {
	Name      string
	Expr      hcl.Expression
	DeclRange hcl.Range
}

// ID is how references name the value: local.NAME.
func (l *Local) ID() string { return "local." + l.Name }

// addLocals decodes one locals block; a campaign may have several, and a name is
// declared once across all of them.
func (p *Plan) addLocals(b *hcl.Block, seen map[string]hcl.Range) hcl.Diagnostics {
	attrs, diags := b.Body.JustAttributes()
	for _, name := range sortedAttrNames(attrs) {
		a := attrs[name]
		if prev, dup := seen[name]; dup {
			diags = append(diags, errorAt(a.NameRange, "Duplicate local value", "local.%s was already declared at %s.", name, prev))
			continue
		}
		seen[name] = a.NameRange
		p.Locals = append(p.Locals, &Local{Name: name, Expr: a.Expr, DeclRange: a.Range})
	}
	return diags
}
