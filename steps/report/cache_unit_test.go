package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// cacheOf decodes a result.json cache section, as readResult does.
func cacheOf(t *testing.T, js string) *blockCache {
	t.Helper()
	var c blockCache
	if err := json.Unmarshal([]byte(js), &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// A cell's cache row says what its measured blocks expected and how many the
// counters contradicted, with the first contradiction's words; priming blocks do
// not count there, and their contradictions are listed apart.
func TestCellCache(t *testing.T) {
	why := "expected primed, but only 0.0 % of prompt tokens came from the prefix cache: the primed corpus was not resident"
	att := func(expected string, contradiction *string) []*attemptRef {
		return []*attemptRef{{N: 1, cache: &blockCache{Expected: expected, Contradiction: contradiction}}}
	}
	c4 := &cellRef{Key: "m/a/c4", Blocks: []*blockRef{
		{Addr: `block.m["a/c4/prime"]`, Phase: "priming", attempts: att("cold", &why)},
		{Addr: `block.m["a/c4/r1"]`, Phase: "measured", Repetition: 1, attempts: att("primed", &why)},
		{Addr: `block.m["a/c4/r2"]`, Phase: "measured", Repetition: 2, attempts: att("primed", nil)},
	}}
	got := cellCache(c4)
	if got.expectedText() != "primed" || got.contradictedText() != "1 of 2 blocks" || got.FirstContradiction != why || got.FirstContradictionBlock != `block.m["a/c4/r1"]` ||
		len(got.PrimingContradictions) != 1 || got.PrimingContradictions[0] != `block.m["a/c4/prime"]: `+why || got.Start != "not recorded" {
		t.Errorf("c4: %+v", got)
	}
	c1 := cellCache(&cellRef{Key: "m/a/c1", Blocks: []*blockRef{{Addr: `block.m["a/c1/r1"]`, Phase: "measured", Repetition: 1, attempts: att("primed", nil)}}})
	if c1.expectedText() != "primed" || c1.contradictedText() != "none" {
		t.Errorf("c1: %q, %q", c1.expectedText(), c1.contradictedText())
	}
	var none *RowCache
	if none.expectedText() != "not recorded" || none.contradictedText() != "—" || none.startText("a") != "not recorded" {
		t.Errorf("a cell without cache records: %q, %q", none.expectedText(), none.contradictedText())
	}
	if cellCache(&cellRef{Blocks: []*blockRef{{Addr: "x", attempts: []*attemptRef{{N: 1}}}}}) != nil {
		t.Error("a cell whose blocks recorded no cache section has a cache row")
	}
}

// An arm whose first block found the cache another arm left (no reset on a shared
// container) is stated as such: the row names the arm and block it inherited from,
// and the report lists it with the priming block's contradiction, which the
// measured-only counts never showed.
func TestCacheInheritedFromOtherArm(t *testing.T) {
	ev, err := readEvidence("testdata/states/verdict-faster")
	if err != nil {
		t.Fatal(err)
	}
	from := `block.primary["incumbent_before/c2/r4"]`
	words := "expected cold, but 98.0 % of prompt tokens came from the prefix cache"
	for _, b := range ev.blocks {
		for _, a := range b.attempts {
			switch {
			case b.Addr == `block.primary["candidate/c2/prime"]`:
				a.cache = cacheOf(t, `{"expected": "cold", "contradiction": "`+words+`", "start": {"state": "carried_over", "carried_from": {"addr": "`+strings.ReplaceAll(from, `"`, `\"`)+`", "arm": "incumbent_before"}, "inherited_from_other_arm": true}}`)
			case b.Arm == "candidate" || !b.measured():
				a.cache = cacheOf(t, `{"expected": "primed", "contradiction": null, "start": {"state": "reset", "inherited_from_other_arm": false}}`)
			default:
				a.cache = cacheOf(t, `{"expected": "primed", "contradiction": null, "start": {"state": "carried_over", "inherited_from_other_arm": false}}`)
			}
		}
	}
	r := ev.build()
	rc := r.rows["primary/candidate/c2"].Cache
	if rc == nil || len(rc.Inherited) != 1 || rc.Inherited[0] != (Inheritance{Block: `block.primary["candidate/c2/prime"]`, Attempt: 1, FromArm: "incumbent_before", FromBlock: from}) {
		t.Fatalf("candidate cache: %+v", rc)
	}
	if rc.Contradicted != 0 || len(rc.PrimingContradictions) != 1 {
		t.Errorf("measured contradictions %d, priming %v", rc.Contradicted, rc.PrimingContradictions)
	}
	if got := r.rows["primary/incumbent_before/c2"].Cache.startText("incumbent_before"); got != "reset" {
		t.Errorf("incumbent_before starts %q", got)
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatal(err)
	}
	md := string(r.document(nil).markdown())
	for _, s := range []string{
		"| primed | none | inherited from arm incumbent_before (" + from + ") at prime |",
		"| primed | none | reset |",
		"- primary/candidate/c2: block.primary[\"candidate/c2/prime\"] attempt 1 started from the cache of arm incumbent_before (" + from + "), not from a state of its own.",
		"- primary/candidate/c2, priming: block.primary[\"candidate/c2/prime\"]: " + words + ".",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// The "Cache at start" column says where the cell's first block attempt found the
// cache, as summary.json's start does; a later attempt that inherited another arm's
// cache is listed under the table, not in the column.
func TestCacheAtStartIsTheFirstAttempts(t *testing.T) {
	cache := func(js string) *blockCache { return cacheOf(t, js) }
	reset := cache(`{"expected":"cold","start":{"state":"reset"}}`)
	inherited := cache(`{"expected":"primed","start":{"state":"carried_over","carried_from":{"addr":"block.m[\"b/c2/r1\"]","arm":"b"},"inherited_from_other_arm":true}}`)
	cell := func(first, second *blockCache) *RowCache {
		return cellCache(&cellRef{Key: "m/a/c2", Blocks: []*blockRef{
			{Addr: `block.m["a/c2/r1"]`, Phase: "measured", Repetition: 1, attempts: []*attemptRef{{N: 1, cache: first}}},
			{Addr: `block.m["a/c2/r2"]`, Phase: "measured", Repetition: 2, attempts: []*attemptRef{{N: 1, cache: second}}},
		}})
	}
	if c := cell(reset, inherited); c.Start != "reset" || c.startText("a") != "reset" || len(c.Inherited) != 1 {
		t.Errorf("first reset, later inherited: start %q, column %q, inherited %+v", c.Start, c.startText("a"), c.Inherited)
	}
	if c := cell(inherited, reset); c.Start != "carried_over" || c.startText("a") != `inherited from arm b (block.m["b/c2/r1"]) at r1` {
		t.Errorf("first inherited: start %q, column %q", c.Start, c.startText("a"))
	}
	// Carried over from the arm's own earlier block, or from traffic no block sent.
	own := cache(`{"expected":"primed","start":{"state":"carried_over","carried_from":{"addr":"block.m[\"a/c1/r3\"]","arm":"a"},"inherited_from_other_arm":false}}`)
	if c := cell(own, reset); c.Start != "carried_over" || c.startText("a") != "carried over from arm a's own blocks" {
		t.Errorf("carried over from its own block: start %q, column %q", c.Start, c.startText("a"))
	}
	unattributed := cache(`{"expected":"cold","start":{"state":"carried_over","inherited_from_other_arm":false}}`)
	if c := cell(unattributed, reset); c.Start != "carried_over" || c.startText("a") != "carried over from traffic no completed block on its container accounts for" {
		t.Errorf("carried over with no earlier block: start %q, column %q", c.Start, c.startText("a"))
	}
}

// TestHitRateNeverRoundsUpToAll: 276,480 hits of 276,588 queries (the quickstart's
// C1 cells) reads >99.9%, not 100.0%; only a cache that never missed reads 100.0%,
// and only one that never hit 0.0%.
func TestHitRateNeverRoundsUpToAll(t *testing.T) {
	for r, want := range map[float64]string{276480.0 / 276588: ">99.9%", 1: "100.0%", 0.4998: "50.0%", 0: "0.0%", 0.0004: "<0.1%", 0.9994: "99.9%"} {
		if got := hitRate(r); got != want {
			t.Errorf("hitRate(%g) = %q, want %q", r, got, want)
		}
	}
}
