package plans

import (
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// TestOwnTypesAreTheCellsValues keeps ownTypes true: newMatrixShared leaves out of
// check the conversion of a value the cell gives itself when the block's type is
// ownTypes[name], so each must be the type value actually makes.
func TestOwnTypesAreTheCellsValues(t *testing.T) {
	names := map[string]cty.Type{}
	for name := range ownTypes {
		names[name] = cty.DynamicPseudoType // value converts to this: no change
	}
	shared := &matrixShared{m: &Matrix{}, implied: cty.Object(names)}
	c := &matrixCell{shared: shared, arm: &Arm{Name: "before"},
		cb: cellBlock{conc: 4, rep: 2, cell: "before/c4", phase: "measured", primed: true, reset: true, expect: CachePrimed}}
	for name, want := range ownTypes {
		sv, ok := c.value(nil, name)
		if !ok {
			t.Errorf("%s: the cell gives no value", name)
			continue
		}
		if got := sv.v.Type(); !got.Equals(want) {
			t.Errorf("%s: the cell's value is %s, ownTypes says %s", name, got.FriendlyName(), want.FriendlyName())
		}
	}
}

// TestDecodedBodyDiagnosticsAreEachCallers: every instance of a step decodes the
// content its block's schema check found, on every core; hcldec appends to the
// diagnostics it gets and listValid edits their details, so no two decodes may
// share them.
func TestDecodedBodyDiagnosticsAreEachCallers(t *testing.T) {
	b := decodedBody{content: &hcl.BodyContent{}, diags: hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Unsupported argument", Detail: "An argument named \"x\" is not expected here."}}}
	_, first := b.Content(nil)
	first[0].Detail += " Valid arguments: a, b."
	_ = append(first[:1], &hcl.Diagnostic{Summary: "appended"})
	_, second := b.Content(nil)
	if len(second) != 1 || second[0].Detail != "An argument named \"x\" is not expected here." {
		t.Errorf("a second decode sees %d diagnostics, the first %q", len(second), second[0].Detail)
	}
	if b.diags[0].Detail != "An argument named \"x\" is not expected here." {
		t.Errorf("the block's own diagnostic became %q", b.diags[0].Detail)
	}
}
