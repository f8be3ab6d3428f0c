package report

import "testing"

// A cell's cache row says what its measured blocks expected and how many the
// counters contradicted, with the first contradiction's words; pilots and priming
// blocks do not count.
func TestCacheByCell(t *testing.T) {
	why := "expected primed, but only 0.0 % of prompt tokens came from the prefix cache: the primed corpus was not resident"
	att := func(expected string, contradiction *string) []*attemptRef {
		return []*attemptRef{{cache: &blockCache{Expected: expected, Contradiction: contradiction}}}
	}
	ev := &evidence{blocks: []*blockRef{
		{Addr: `block.m["a/c4/prime"]`, Matrix: "m", CellKey: "m/a/c4", Phase: "priming", attempts: att("cold", &why)},
		{Addr: `block.m["a/c4/r1"]`, Matrix: "m", CellKey: "m/a/c4", Phase: "measured", Repetition: 1, attempts: att("primed", &why)},
		{Addr: `block.m["a/c4/r2"]`, Matrix: "m", CellKey: "m/a/c4", Phase: "measured", Repetition: 2, attempts: att("primed", nil)},
		{Addr: `block.m["a/c1/r1"]`, Matrix: "m", CellKey: "m/a/c1", Phase: "measured", Repetition: 1, attempts: att("primed", nil)},
		{Addr: `block.pilot["c4"]`, CellKey: "", Phase: "pilot", Repetition: 1, attempts: att("cold", &why)},
	}}
	got := ev.cacheByCell()
	c4, c1 := got["m/a/c4"], got["m/a/c1"]
	if c4.expectedText() != "primed" || c4.contradictedText() != "1 of 2 blocks" || c4.first != why || c4.firstBlock != `block.m["a/c4/r1"]` {
		t.Errorf("c4: %q, %q, first %q in %s", c4.expectedText(), c4.contradictedText(), c4.first, c4.firstBlock)
	}
	if c1.expectedText() != "primed" || c1.contradictedText() != "none" || len(got) != 2 {
		t.Errorf("c1: %q, %q; %d cells", c1.expectedText(), c1.contradictedText(), len(got))
	}
	var none *cellCache
	if none.expectedText() != "not recorded" || none.contradictedText() != "—" {
		t.Errorf("a cell without cache records: %q, %q", none.expectedText(), none.contradictedText())
	}
}
