package plans

import (
	"github.com/hashicorp/hcl/v2"
)

// Matrix is a matrix block: arms (in declared order, each bound to a target) times
// concurrencies times repetitions, expanded into block step instances named
// block.NAME["arm/cN/rK"], with an optional priming block "arm/cN/prime" first.
//
// Arms run in declared order: each arm's setup steps (a deploy, say) depend on every
// block of the previous arm, and the arm's blocks depend on its setup steps. This is
// how an ABBA order is written once and run as written.
type Matrix struct {
	Name      string
	Order     int
	DeclRange hcl.Range
	SrcRange  hcl.Range
	Attrs     hcl.Attributes
	Arms      []*Arm
}

// Arm is one arm of a matrix.
type Arm struct {
	Name      string
	Target    hcl.Expression
	Setup     []hcl.Traversal
	DeclRange hcl.Range
}

// ID is how references name the matrix's instances: step.block.NAME.
func (m *Matrix) ID() string { return "step.block." + m.Name }

var matrixSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "workload", Required: true}, {Name: "concurrency", Required: true},
		{Name: "repetitions"}, {Name: "priming"}, {Name: "requests", Required: true},
		{Name: "timeout"}, {Name: "gates"}, {Name: "uses"}, {Name: "on_failure"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "arm", LabelNames: []string{"name"}}},
}

var armSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{{Name: "target", Required: true}, {Name: "setup"}},
}

func decodeMatrix(b *hcl.Block, order int) (*Matrix, hcl.Diagnostics) {
	m := &Matrix{Name: b.Labels[0], Order: order, DeclRange: b.DefRange, SrcRange: blockRange(b)}
	content, diags := b.Body.Content(matrixSchema)
	diags = listValid(diags, "matrix", schemaNames(matrixSchema))
	if content == nil {
		return nil, diags
	}
	m.Attrs = content.Attributes
	seen := map[string]hcl.Range{}
	for _, ab := range content.Blocks {
		name := ab.Labels[0]
		if prev, dup := seen[name]; dup {
			diags = append(diags, errorAt(ab.DefRange, "Duplicate arm name", "Arm %q was already declared at %s.", name, prev))
			continue
		}
		seen[name] = ab.DefRange
		ac, ad := ab.Body.Content(armSchema)
		diags = append(diags, listValid(ad, "arm", schemaNames(armSchema))...)
		if ac == nil || ac.Attributes["target"] == nil {
			continue
		}
		arm := &Arm{Name: name, Target: ac.Attributes["target"].Expr, DeclRange: ab.DefRange}
		if a, ok := ac.Attributes["setup"]; ok {
			trs, td := staticTraversals(a)
			diags = append(diags, td...)
			arm.Setup = trs
		}
		m.Arms = append(m.Arms, arm)
	}
	if len(content.Blocks) == 0 {
		diags = append(diags, errorAt(b.DefRange, "Matrix has no arms", `A matrix needs at least one arm block, e.g. arm "incumbent_before" { target = target.incumbent }.`))
	}
	return m, diags
}

// staticTraversals reads a list of plain references such as [step.deploy.candidate].
func staticTraversals(a *hcl.Attribute) ([]hcl.Traversal, hcl.Diagnostics) {
	exprs, diags := hcl.ExprList(a.Expr)
	var out []hcl.Traversal
	for _, e := range exprs {
		tr, d := hcl.AbsTraversalForExpr(e)
		if d.HasErrors() {
			diags = append(diags, errorAt(e.Range(), "Invalid reference", "%s must list references such as step.deploy.candidate, not expressions.", a.Name))
			continue
		}
		out = append(out, tr)
	}
	return out, diags
}
