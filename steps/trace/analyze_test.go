package trace

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// frame is one hand-made sample: selection at sel, ranks starting 22 µs and 24 µs
// after it and lasting d0 and d1, completion observed 22 µs after the last rank.
type frame struct {
	graph, lanes     int
	queued           bool
	sel, d0, d1      int64
	omitWall         bool
	retained, obsAt  int64
	noPrior          bool
	fresh, origin    string
	sourceEquivalent int64 // 0: absent
}

const us = int64(time.Microsecond)

func (f frame) sample(seq int) sim.TraceSample {
	r0 := sim.TraceRankWindow{Rank: 0, StartNS: f.sel + 22*us, EndNS: f.sel + 22*us + f.d0}
	r1 := sim.TraceRankWindow{Rank: 1, StartNS: f.sel + 24*us, EndNS: f.sel + 24*us + f.d1}
	obs := max(r0.EndNS, r1.EndNS) + 22*us
	s := sim.TraceSample{Seq: seq, Graph: f.graph, ScheduledLanes: f.lanes, Queued: f.queued, Requests: []sim.TraceSlot{},
		SelectedAtNS: f.sel, CommittedAtNS: f.sel + 12*us, CompletionObservedAtNS: obs, HostWallNS: obs - f.sel,
		RetainedNS: f.retained, Ranks: []sim.TraceRankWindow{r0, r1},
		Selection:               sim.TraceSelection{ObservedAtNS: f.obsAt, Freshness: f.fresh, RefreshOrigin: f.origin},
		PriorObservationPresent: !f.noPrior, PriorObservationAgeNS: f.sel - f.obsAt, SourceEquivalentCostNS: f.sourceEquivalent}
	return s
}

// doc builds a capture document; the before anchor sits at mono 0, the after anchor
// at mono `span` and `span + skew` later in UTC.
func doc(t *testing.T, incarnation string, span, skew time.Duration, frames ...frame) []byte {
	t.Helper()
	c := sim.TraceCapture{Format: sim.TraceFormat, RequestedDurationNS: int64(span) - 2000, Ranks: []int{0, 1}, Capacity: 1024}
	c.Incarnation.Before, c.Incarnation.After = incarnation, incarnation
	t0 := time.Date(2026, 10, 22, 4, 0, 0, 0, time.UTC)
	c.Clock.Before = sim.TraceAnchor{MonoNS: 0, UTC: t0.Format(time.RFC3339Nano)}
	c.Clock.After = sim.TraceAnchor{MonoNS: int64(span), UTC: t0.Add(span + skew).Format(time.RFC3339Nano)}
	c.Window.StartNS, c.Window.EndNS = 1000, int64(span)-1000
	c.Graphs = []sim.TraceGraph{
		{Index: 0, Kind: "speculative", Shape: "4x3", BatchCapacity: 4, TokenCapacity: 16},
		{Index: 1, Kind: "mixed", Shape: "4x3+p2048", BatchCapacity: 4, TokenCapacity: 2064, PrefillCapacity: 2048},
	}
	c.Samples = []sim.TraceSample{}
	for i, f := range frames {
		c.Samples = append(c.Samples, f.sample(i))
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	// Drop the optional fields a frame says are absent.
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	for i, f := range frames {
		s := m["samples"].([]any)[i].(map[string]any)
		if f.omitWall {
			delete(s, "host_wall_ns")
		}
		if f.sourceEquivalent == 0 {
			delete(s, "source_equivalent_cost_ns")
		}
	}
	raw, _ = json.Marshal(m)
	return raw
}

func parse(t *testing.T, raw []byte) *Capture {
	t.Helper()
	c, err := Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAnalyzeGroupsAndRules(t *testing.T) {
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	const m = int64(time.Millisecond)
	frames := []frame{
		// Two unqueued speculative frames at 4 lanes: the second carries no host_wall_ns.
		{graph: 0, lanes: 4, sel: 0, d0: 22600 * us, d1: 22605 * us, retained: 22500 * us, obsAt: -20 * m, fresh: "fresh", origin: "completion", sourceEquivalent: 22651 * us},
		{graph: 0, lanes: 4, sel: 30 * m, d0: 22700 * us, d1: 22690 * us, omitWall: true, retained: 22651 * us, obsAt: 22651 * us, fresh: "fresh", origin: "completion"},
		// A queued mixed frame: its host wall includes waiting, the reference is max-rank.
		{graph: 1, lanes: 4, queued: true, sel: 60 * m, d0: 30 * m, d1: 30010 * us, retained: 29 * m, obsAt: -500 * m, fresh: "stale", origin: "completion", sourceEquivalent: 30010 * us},
		// An unqueued frame at 3 lanes with no prior observation.
		{graph: 0, lanes: 3, sel: 100 * m, d0: 20 * m, d1: 20 * m, retained: 19 * m, obsAt: 100 * m, noPrior: true, fresh: "unobserved", origin: "estimate"},
	}
	a := Analyze([]*Capture{parse(t, doc(t, "inc-1", time.Second, 0, frames...))})

	wall := func(f frame) int64 { return max(f.d0+22*us, f.d1+24*us) + 22*us }
	pct := func(retained, ref int64) float64 { return (float64(retained)/float64(ref) - 1) * 100 }
	one := func(x float64) Stat { return Stat{N: 1, Min: x, P50: x, P95: x, Max: x} }
	two := func(a, b float64) Stat {
		lo, hi := min(a, b), max(a, b)
		return Stat{N: 2, Min: lo, P50: (lo + hi) / 2, P95: lo + 0.95*(hi-lo), Max: hi}
	}
	f0, f1, f2, f3 := frames[0], frames[1], frames[2], frames[3]
	want := []Group{
		{Graph: 0, Kind: "speculative", Shape: "4x3", BatchCapacity: 4, TokenCapacity: 16, Lanes: 3, Samples: 1,
			Ranks:     []RankStat{{0, one(20)}, {1, one(20)}},
			MaxRankMS: one(20), RankSpreadUS: one(0), HostWallMS: one(ms(wall(f3))), WallMinusGPUUS: one(float64(wall(f3)-20*m) / 1e3),
			SelectToCommitUS: one(12), CommitToObsMS: one(ms(wall(f3) - 12*us)),
			RetainedMS: one(19), Reference: RefMaxRankWall, ReferenceMS: one(ms(wall(f3))), RetainedVsRefPct: one(pct(19*m, wall(f3))),
			WithoutPrior: 1, Freshness: map[string]int{"unobserved": 1}, Origins: map[string]int{"estimate": 1}},
		{Graph: 0, Kind: "speculative", Shape: "4x3", BatchCapacity: 4, TokenCapacity: 16, Lanes: 4, Samples: 2,
			Ranks:        []RankStat{{0, two(22.6, 22.7)}, {1, two(22.605, 22.69)}},
			MaxRankMS:    two(22.605, 22.7),
			RankSpreadUS: two(5, 10), HostWallMS: two(ms(wall(f0)), ms(wall(f1))),
			WallMinusGPUUS:   two(float64(wall(f0)-22605*us)/1e3, float64(wall(f1)-22700*us)/1e3),
			SelectToCommitUS: two(12, 12), CommitToObsMS: two(ms(wall(f0)-12*us), ms(wall(f1)-12*us)),
			RetainedMS: two(22.5, 22.651), Reference: RefMaxRankWall, ReferenceMS: two(ms(wall(f0)), ms(wall(f1))),
			RetainedVsRefPct: two(pct(22500*us, wall(f0)), pct(22651*us, wall(f1))),
			AgeMS:            two(20, ms(30*m-22651*us)), Freshness: map[string]int{"fresh": 2}, Origins: map[string]int{"completion": 2}},
		{Graph: 1, Kind: "mixed", Shape: "4x3+p2048", BatchCapacity: 4, TokenCapacity: 2064, PrefillCapacity: 2048, Lanes: 4, Queued: true, Samples: 1,
			Ranks:     []RankStat{{0, one(30)}, {1, one(30.01)}},
			MaxRankMS: one(30.01), RankSpreadUS: one(10), HostWallMS: one(ms(wall(f2))), WallMinusGPUUS: one(float64(wall(f2)-30010*us) / 1e3),
			SelectToCommitUS: one(12), CommitToObsMS: one(ms(wall(f2) - 12*us)),
			RetainedMS: one(29), Reference: RefMaxRank, ReferenceMS: one(30.01), RetainedVsRefPct: one(pct(29*m, 30010*us)),
			AgeMS: one(560), Freshness: map[string]int{"stale": 1}, Origins: map[string]int{"completion": 1}},
	}
	if d := cmp.Diff(want, a.Groups, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	if a.Samples != 4 || a.Queued != 1 || a.Unqueued != 3 || a.HostWallField != 3 {
		t.Errorf("counts: %+v", a)
	}
	// Over every sample: the per-rank maximum, never a sum of ranks.
	if a.MaxRankMS.N != 4 || a.MaxRankMS.Max != 30.01 || a.MaxRankMS.Min != 20 {
		t.Errorf("max-rank over all samples %+v", a.MaxRankMS)
	}
	// source_equivalent_cost_ns: frame 0 carries the rule's value, frame 2 too.
	if a.SourceEquivalent != 2 || a.SourceEquivalentAgree != 2 {
		t.Errorf("source-equivalent %d, agree %d", a.SourceEquivalent, a.SourceEquivalentAgree)
	}
}

func TestWindowAlignmentBound(t *testing.T) {
	cases := map[string]struct {
		skew time.Duration
		want int64
	}{
		"clocks agree":           {0, 0},
		"wall clock ahead":       {1500 * time.Nanosecond, 1500},
		"wall clock slewed back": {-40 * time.Microsecond, 40000},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := parse(t, doc(t, "inc", time.Second, tc.skew)).Window()
			want := Window{RequestedS: 0.999998, WindowS: 0.999998, StartUTC: "2026-10-22T04:00:00.000001Z", EndUTC: "2026-10-22T04:00:00.999999Z", AlignmentBoundNS: tc.want}
			if d := cmp.Diff(want, w); d != "" {
				t.Errorf("window (-want +got):\n%s", d)
			}
		})
	}
}

// A graph index that names another graph in another capture stays apart, and says so.
func TestAnalyzeGraphConflict(t *testing.T) {
	a := parse(t, doc(t, "inc", time.Second, 0, frame{graph: 0, lanes: 4, d0: 1000, d1: 1000}))
	b := doc(t, "inc", time.Second, 0, frame{graph: 0, lanes: 4, d0: 1000, d1: 1000})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	m["graphs"].([]any)[0].(map[string]any)["shape"] = "2x3"
	b, _ = json.Marshal(m)
	got := Analyze([]*Capture{a, parse(t, b)})
	if len(got.GraphConflicts) != 1 || len(got.Groups) != 2 {
		t.Errorf("conflicts %v, %d groups: graph 0 is 4x3 in one capture and 2x3 in the other", got.GraphConflicts, len(got.Groups))
	}
}

func TestAgeFieldDisagreement(t *testing.T) {
	raw := doc(t, "inc", time.Second, 0, frame{graph: 0, lanes: 4, sel: 5000, d0: 1000, d1: 1000, obsAt: 1000, fresh: "fresh", origin: "completion"})
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	m["samples"].([]any)[0].(map[string]any)["prior_observation_age_ns"] = 7
	raw, _ = json.Marshal(m)
	a := Analyze([]*Capture{parse(t, raw)})
	if a.AgeFieldDisagree != 1 || a.Groups[0].AgeMS.P50 != 0.004 {
		t.Errorf("age field disagreements %d, age %+v: the age is selected_at − observed_at (4000 ns), whatever the field says", a.AgeFieldDisagree, a.Groups[0].AgeMS)
	}
}
