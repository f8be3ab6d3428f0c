package report

import (
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
)

// A campaign held and continued has two outage windows: the report lists each with
// its opener, closer, elapsed time and budget, never the first begin with the last
// end. A window without an end record says so; a window over its budget says so.
func TestOutageWindows(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	rec := func(seq int, kind string, step string, w int, at time.Duration) engine.Record {
		return engine.Record{Seq: seq, Kind: kind, Step: step, Window: w, Time: t0.Add(at), BudgetS: 600, ReserveS: 120}
	}
	end1 := rec(2, engine.KindOutageEnd, "restore.incumbent", 1, 90*time.Second)
	end1.ElapsedS = 90
	end2 := rec(4, engine.KindOutageEnd, "restore.incumbent", 2, 4000*time.Second)
	end2.ElapsedS, end2.Overrun, end2.BudgetS = 700, true, 650
	ev := &evidence{outage: []engine.Record{
		rec(1, engine.KindOutageBegin, "deploy.candidate", 1, 0),
		end1,
		rec(3, engine.KindOutageBegin, "deploy.candidate", 2, 3300*time.Second),
		end2,
		rec(5, engine.KindOutageBegin, "deploy.other", 3, 5000*time.Second),
	}}
	ws := ev.outageWindows()
	if len(ws) != 3 || ws[0].Window != 1 || ws[1].Window != 2 || ws[2].Window != 3 {
		t.Fatalf("windows: %+v", ws)
	}
	if ws[1].OpenedAt != "2026-11-30T10:55:00Z" || ws[1].ClosedAt != "2026-11-30T11:06:40Z" || *ws[1].ElapsedS != 700 || ws[1].BudgetS != 650 || !ws[1].Overrun {
		t.Errorf("window 2: %+v", ws[1])
	}
	r := &Report{ev: ev}
	r.Summary.OutageWindows = ws
	d := &document{}
	r.closureSection(d)
	md := string(d.markdown())
	for _, want := range []string{
		"3 outage windows: a held campaign that is continued opens a new window with its own budget.",
		"- Outage window 1 opened by deploy.candidate and closed by restore.incumbent after 90.000 s, within the 600 s budget with 120 s reserved for restore.",
		"- Outage window 2 opened by deploy.candidate and closed by restore.incumbent after 700.000 s, over the 650 s budget with 120 s reserved for restore.",
		"- Outage window 3 opened by deploy.other at 2026-11-30T11:23:20Z has no end record: the incumbent was not verified restored.",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("closure lacks %q:\n%s", want, md)
		}
	}
	// Every window, open or closed, validates against the schema.
	full, err := Build("testdata/states/clean")
	if err != nil {
		t.Fatal(err)
	}
	full.Summary.OutageWindows = ws
	if _, err := full.SummaryJSON(); err != nil {
		t.Errorf("three windows against the schema: %v", err)
	}

	// A journal from before windows were numbered: begin/end pairs in order.
	old := &evidence{outage: []engine.Record{
		rec(1, engine.KindOutageBegin, "deploy.candidate", 0, 0), rec(2, engine.KindOutageEnd, "restore.incumbent", 0, time.Minute),
		rec(3, engine.KindOutageBegin, "deploy.candidate", 0, time.Hour), rec(4, engine.KindOutageEnd, "restore.incumbent", 0, 2*time.Hour),
	}}
	ws = old.outageWindows()
	if len(ws) != 2 || ws[0].Window != 1 || ws[1].Window != 2 || ws[0].ClosedBy == "" || ws[1].ClosedBy == "" {
		t.Errorf("unnumbered windows: %+v", ws)
	}
	// One window reads as before: "Outage opened by …".
	if l := outageLines(ws[:1]); len(l) != 1 || !strings.HasPrefix(l[0], "Outage opened by deploy.candidate and closed by restore.incumbent after ") {
		t.Errorf("one window: %q", l)
	}
}
