package report

import (
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// observe marks blocks of a checked-in state as observed by a capture, as
// diagnostics() does from overlap.json, and builds the report.
func observe(t *testing.T, state, capture string, addrs ...string) *Report {
	t.Helper()
	ev, err := readEvidence(state)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		b := ev.blockByAddr(a)
		if b == nil {
			t.Fatalf("no block %s", a)
		}
		b.observedBy = append(b.observedBy, capture)
	}
	return ev.build()
}

// A measured block a capture ran during is not clean data: it leaves its cell's
// figures, is marked in its block row, and never enters the verdict. verdict-faster
// promotes when nothing is observed; with one candidate repetition observed, the rule
// (4 matched repetitions) has only 3 clean ones and the comparison is ineligible,
// naming the observed block.
func TestObservedBlockLeavesFiguresAndVerdict(t *testing.T) {
	const state = "testdata/states/verdict-faster"
	clean, err := Build(state)
	if err != nil {
		t.Fatal(err)
	}
	if !clean.Summary.Promotion.Promoted {
		t.Fatalf("unobserved: %s", clean.Summary.Promotion.Verdict)
	}
	r2 := `block.primary["candidate/c2/r2"]`
	r := observe(t, state, "trace.under_load", r2)
	row := r.rows["primary/candidate/c2"]
	if row.Observed == nil || row.Observed.InFigures || len(row.Observed.Blocks) != 1 ||
		row.Observed.Blocks[0] != `r2 (`+r2+`) observed by trace.under_load` {
		t.Fatalf("observed: %+v", row.Observed)
	}
	attempted := 0
	for _, b := range row.Blocks {
		switch {
		case b.Step == r2:
			if b.InStatistics || len(b.ObservedBy) != 1 || b.ObservedBy[0] != "trace.under_load" {
				t.Errorf("observed block row: %+v", b)
			}
		case b.InStatistics:
			if len(b.ObservedBy) != 0 {
				t.Errorf("%s: observed_by %v", b.Step, b.ObservedBy)
			}
			attempted += b.Attempted
		}
	}
	if *row.Attempted != attempted || !strings.HasPrefix(row.AggregateBasis, "mean over 3 measured block(s)") {
		t.Errorf("figures over %d attempted, basis %q; want the 3 unobserved blocks' %d", *row.Attempted, row.AggregateBasis, attempted)
	}
	if *row.Timing.TTFT.P50 == *clean.rows["primary/candidate/c2"].Timing.TTFT.P50 && row.Timing.TTFT.Samples == clean.rows["primary/candidate/c2"].Timing.TTFT.Samples {
		t.Errorf("the timing distribution still includes the observed block")
	}
	v := r.Summary.Promotion
	if v.Promoted || v.Eligible || len(v.Comparisons) != 1 {
		t.Fatalf("verdict with an observed block: %s", v.Verdict)
	}
	c := v.Comparisons[0]
	want := `primary/candidate/c2 has 3 of the 4 matched repetitions required (observed blocks never enter a verdict: r2 (` + r2 + `) observed by trace.under_load)`
	if c.Eligible || !strings.Contains(c.Ineligible, want) || len(c.Candidate.Excluded) != 1 {
		t.Errorf("comparison: %q, excluded %v", c.Ineligible, c.Candidate.Excluded)
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatal(err)
	}
	md := string(r.document(nil).markdown())
	for _, s := range []string{
		"Blocks a trace or nsys capture ran during (its overlap.json, or its UTC window on the same container) are not clean data:",
		`- primary/candidate/c2: a capture ran during r2 (` + r2 + `) observed by trace.under_load: excluded from this cell's figures, which are over its unobserved blocks; an observed block never enters a verdict.`,
		"1 measured block(s) a capture ran during are excluded from their cells' figures.",
		"| " + r2 + " (observed by trace.under_load) | candidate | 2 | 2 | 1 |",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}

// A cell whose every measured block was observed (a trace-on cell) keeps its figures,
// labelled as the stack under observation; as the drift control of the rule it gives
// no figure, so the comparison is ineligible and names the observed blocks.
func TestObservedCellKeepsLabelledFigures(t *testing.T) {
	var addrs []string
	for _, rep := range []string{"r1", "r2", "r3", "r4"} {
		addrs = append(addrs, `block.primary["incumbent_after/c2/`+rep+`"]`)
	}
	r := observe(t, "testdata/states/verdict-faster", "nsys.timeline", addrs...)
	row := r.rows["primary/incumbent_after/c2"]
	if row.Observed == nil || !row.Observed.InFigures || !strings.Contains(row.Observed.Note, "its figures describe the stack under observation, not clean data, and never enter a verdict") {
		t.Fatalf("observed: %+v", row.Observed)
	}
	if row.AggregateTokS == nil || row.Timing == nil || !strings.HasPrefix(row.AggregateBasis, "mean over 4 measured block(s)") {
		t.Errorf("the observed cell lost its figures: %q", row.AggregateBasis)
	}
	for _, b := range row.Blocks {
		if b.Repetition > 0 && (!b.InStatistics || len(b.ObservedBy) != 1) {
			t.Errorf("%s: in_statistics %t, observed_by %v", b.Step, b.InStatistics, b.ObservedBy)
		}
	}
	v := r.Summary.Promotion
	if v.Promoted || len(v.Comparisons) != 1 || !strings.Contains(v.Comparisons[0].Ineligible, "drift control primary/incumbent_after/c2 has 0 of the 4 matched repetitions required (observed blocks never enter a verdict: r1 (") {
		t.Errorf("verdict: %s; %+v", v.Verdict, v.Comparisons)
	}
	if len(r.Summary.Statistics.Drift) != 1 || r.Summary.Statistics.Drift[0].Mean != nil {
		t.Errorf("drift over observed blocks: %+v", r.Summary.Statistics.Drift)
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatal(err)
	}
	if n := r.ev.observedExcluded(); n != 0 {
		t.Errorf("%d blocks counted as excluded; the cell's figures are over them", n)
	}
}

// A capture that overlapped a block it did not declare (no during, so no
// overlap.json names the block) still observed it: its UTC window against the block
// attempt's anchors on the same container says so. Blocks on another container, and
// blocks that ended before the capture began, were not observed.
func TestBlocksWithinCaptureWindow(t *testing.T) {
	at := func(s string) time.Time { x, _ := time.Parse(time.RFC3339, s); return x }
	blk := func(addr, container, from, to string) *blockRef {
		res := &loadgen.Result{Anchors: &loadgen.Anchors{Before: loadgen.Anchor{UTC: at(from)}, After: loadgen.Anchor{UTC: at(to)}}}
		return &blockRef{Addr: addr, Target: map[string]any{"name": "t-" + container, "container": container}, attempts: []*attemptRef{{N: 1, result: res}}}
	}
	ev := &evidence{blocks: []*blockRef{
		blk("block.prime", "inc", "2026-11-30T10:00:00Z", "2026-11-30T10:01:00Z"),    // the capture starts 43 s into it
		blk("block.before", "inc", "2026-11-30T09:00:00Z", "2026-11-30T09:59:00Z"),   // ended before
		blk("block.other", "cand", "2026-11-30T10:00:00Z", "2026-11-30T10:02:00Z"),   // another container
		blk("block.touching", "inc", "2026-11-30T10:01:44Z", "2026-11-30T10:03:00Z"), // starts as the capture ends
		{Addr: "block.pending", Target: map[string]any{"container": "inc"}, attempts: []*attemptRef{{N: 1}}},
	}}
	capture := &instanceDoc{Addr: "trace.coincidence", Config: map[string]any{"target": map[string]any{"name": "t-inc", "container": "inc"}}}
	var got []string
	for _, b := range ev.blocksWithin(capture, "2026-11-30T10:00:43Z", "2026-11-30T10:01:44Z") {
		got = append(got, b.Addr)
	}
	if len(got) != 1 || got[0] != "block.prime" {
		t.Errorf("observed %v, want [block.prime]", got)
	}
	if ev.blocksWithin(capture, "not a time", "2026-11-30T10:01:44Z") != nil || ev.blocksWithin(&instanceDoc{}, "2026-11-30T10:00:43Z", "2026-11-30T10:01:44Z") != nil {
		t.Error("a capture without a window or a target observed blocks")
	}
}
