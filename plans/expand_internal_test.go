package plans

import (
	"testing"

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
