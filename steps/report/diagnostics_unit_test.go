package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/nsys"
	"github.com/rigor-bench/rigor/steps/nsys/nsysdb"
	"github.com/rigor-bench/rigor/steps/trace"
)

// overlapDoc is overlap.json as engine/during.go writes it; "" is a null time.
func overlapDoc(block, blockStart, blockEnd, capStart, capEnd string, overlapped bool) []byte {
	t := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	b, _ := json.Marshal(map[string]any{
		"block": block, "declared": "after 8 completed requests",
		"block_window":   map[string]any{"start": t(blockStart), "end": t(blockEnd)},
		"capture_window": map[string]any{"start": capStart, "end": capEnd},
		"block_requests_completed_at_capture_end": 12, "overlapped": overlapped, "detail": "what the engine saw",
	})
	return b
}

func TestParseOverlap(t *testing.T) {
	const b0, b1 = "2026-10-22T03:00:00Z", "2026-10-22T03:02:00Z"
	cases := map[string]struct {
		doc        []byte
		consistent bool
		overlapS   float64
		note, err  string
	}{
		"within the block's load": {doc: overlapDoc("block.x", b0, b1, "2026-10-22T03:00:10Z", "2026-10-22T03:00:11Z", true),
			consistent: true, overlapS: 1, note: "ran within block.x's load (after 8 completed requests): 1.000 s, 12 of its requests completed by the capture's end"},
		"block still running at the capture's end": {doc: overlapDoc("block.x", b0, "", "2026-10-22T03:00:10Z", "2026-10-22T03:00:10.5Z", true),
			consistent: true, overlapS: 0.5, note: "ran within block.x's load"},
		"started before the first request, said so": {doc: overlapDoc("block.x", b0, b1, "2026-10-22T02:59:59.5Z", "2026-10-22T03:00:00.5Z", false),
			consistent: true, overlapS: 0.5, note: "did not run within block.x's load: what the engine saw; not a capture under load"},
		"outlasted the block, said so": {doc: overlapDoc("block.x", b0, b1, "2026-10-22T03:01:59Z", "2026-10-22T03:02:01Z", false),
			consistent: true, overlapS: 1, note: "not a capture under load"},
		"the block sent nothing": {doc: overlapDoc("block.x", "", "", "2026-10-22T03:00:10Z", "2026-10-22T03:00:11Z", false),
			consistent: true, note: "not a capture under load"},
		"claims a load its windows deny": {doc: overlapDoc("block.x", b0, b1, "2026-10-22T03:02:01Z", "2026-10-22T03:02:02Z", true),
			note: "says it ran within block.x's load, but its windows say otherwise"},
		"denies a load its windows show": {doc: overlapDoc("block.x", b0, b1, "2026-10-22T03:01:00Z", "2026-10-22T03:01:01Z", false),
			overlapS: 1, note: "says it did not run within block.x's load, but its windows say it did"},
		"window backwards": {doc: overlapDoc("block.x", b1, b0, b0, b1, true), err: "ends before it starts"},
		"local time":       {doc: overlapDoc("block.x", "2026-10-22T03:00:00+02:00", b1, b0, b1, true), err: "overlap"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o, err := parseOverlap(tc.doc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Consistent != tc.consistent || math.Abs(o.OverlapS-tc.overlapS) > 1e-9 || !strings.Contains(o.Note, tc.note) || !o.Recorded || o.Declared == "" || o.RequestsDone != 12 {
				t.Errorf("%+v; want consistent %v, overlap %g s, note containing %q", o, tc.consistent, tc.overlapS, tc.note)
			}
		})
	}
}

// captureDoc is a minimal complete capture of n unqueued samples on two ranks.
func captureDoc(t *testing.T, incarnation string, n int) *trace.Capture {
	t.Helper()
	c := sim.TraceCapture{Format: sim.TraceFormat, RequestedDurationNS: 1e9, Ranks: []int{0, 1}, Capacity: 64, Samples: []sim.TraceSample{}}
	c.Incarnation.Before, c.Incarnation.After = incarnation, incarnation
	c.Clock.Before = sim.TraceAnchor{MonoNS: 0, UTC: "2026-10-22T03:00:00Z"}
	c.Clock.After = sim.TraceAnchor{MonoNS: 2e9, UTC: "2026-10-22T03:00:02Z"}
	c.Window.StartNS, c.Window.EndNS = 1, 1e9
	c.Graphs = []sim.TraceGraph{{Index: 0, Kind: "speculative", Shape: "4x3", BatchCapacity: 4, TokenCapacity: 16}}
	for i := range n {
		at := int64(i) * 1e6
		c.Samples = append(c.Samples, sim.TraceSample{Seq: i, ScheduledLanes: 4, Requests: []sim.TraceSlot{}, SelectedAtNS: at, CommittedAtNS: at + 10, CompletionObservedAtNS: at + 900,
			HostWallNS: 900, RetainedNS: 800, SourceEquivalentCostNS: 900, PriorObservationAgeNS: 100, Selection: sim.TraceSelection{ObservedAtNS: at - 100, Freshness: "fresh", RefreshOrigin: "completion"}, PriorObservationPresent: true,
			Ranks: []sim.TraceRankWindow{{Rank: 0, StartNS: at + 20, EndNS: at + 820}, {Rank: 1, StartNS: at + 22, EndNS: at + 830}}})
	}
	raw, _ := json.Marshal(c)
	p, err := trace.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The pooled incarnation of a target: the most complete captures, then the most
// samples, then the earliest; incomplete captures never count.
func TestPoolOneIncarnation(t *testing.T) {
	type in struct {
		inc       string
		samples   int
		notPooled string
	}
	cases := map[string]struct {
		rows     []in
		want     string
		excluded [2]int // captures, samples
	}{
		"most captures":                   {[]in{{"A", 5, ""}, {"B", 50, ""}, {"A", 5, ""}}, "A", [2]int{1, 50}},
		"tie on captures: most samples":   {[]in{{"A", 5, ""}, {"B", 50, ""}}, "B", [2]int{1, 5}},
		"tie on both: the earliest":       {[]in{{"B", 5, ""}, {"A", 5, ""}}, "B", [2]int{1, 5}},
		"incomplete captures never count": {[]in{{"A", 5, ""}, {"B", 5, "incomplete capture"}, {"B", 5, "incomplete capture"}}, "A", [2]int{0, 0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var rows []TraceCaptureRow
			for i, r := range tc.rows {
				rows = append(rows, TraceCaptureRow{Step: "trace.t", Attempt: i + 1, Target: "flare", Incarnation: r.inc, Samples: r.samples, NotPooled: r.notPooled, capture: captureDoc(t, r.inc, r.samples)})
			}
			pools := poolTraces(rows)
			if len(pools) != 1 {
				t.Fatalf("%d pools", len(pools))
			}
			p := pools[0]
			// Every hand-made capture covers the same window: two pooled ones overlap.
			if pairs := len(p.Captures) * (len(p.Captures) - 1) / 2; len(p.Overlapping) != pairs {
				t.Errorf("overlapping %v for %d pooled captures of one window", p.Overlapping, len(p.Captures))
			}
			if p.Incarnation != tc.want || p.ExcludedCaptures != tc.excluded[0] || p.ExcludedSamples != tc.excluded[1] {
				t.Errorf("pooled %s, excluded %d captures / %d samples; want %s, %v", p.Incarnation, p.ExcludedCaptures, p.ExcludedSamples, tc.want, tc.excluded)
			}
			pooled := 0
			for _, r := range rows {
				if r.Pooled {
					pooled += r.Samples
					if r.Incarnation != tc.want {
						t.Errorf("a capture of %s was pooled with %s", r.Incarnation, tc.want)
					}
				}
			}
			if p.Analysis.Samples != pooled {
				t.Errorf("analysis over %d samples, pooled captures hold %d", p.Analysis.Samples, pooled)
			}
		})
	}
}

// A capture file the journal does not list, or lists with another hash, is an
// integrity problem; it is still read.
func TestCaptureFilesCheckedAgainstJournal(t *testing.T) {
	dir := t.TempDir()
	att := "attempts/trace.t/1"
	if err := os.MkdirAll(filepath.Join(dir, att), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, att, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("raw.json", "{}")
	write("overlap.json", "{}")
	write("validation.json", "{}")
	end := &engine.Record{Artefacts: []engine.Artefact{
		{Path: att + "/raw.json", SHA256: plans.SHA256Hex([]byte("{}"))},
		{Path: att + "/validation.json", SHA256: plans.SHA256Hex([]byte("other"))},
	}}
	ev := &evidence{dir: dir}
	c := captureAttempt{addr: "trace.t", n: 1, dir: att, end: end}
	for _, name := range []string{"raw.json", "overlap.json", "validation.json"} {
		if _, _, ok := ev.readAttemptFile(c, name); !ok {
			t.Fatalf("%s not read", name)
		}
	}
	if _, _, ok := ev.readAttemptFile(c, "absent.json"); ok {
		t.Error("an absent file read")
	}
	want := []string{
		att + "/overlap.json: not among the artefacts the journal recorded for trace.t attempt 1 (sha256 " + plans.SHA256Hex([]byte("{}")) + ")",
		att + "/validation.json: sha256 " + plans.SHA256Hex([]byte("{}")) + ", journal recorded " + plans.SHA256Hex([]byte("other")),
	}
	if d := cmp.Diff(want, ev.problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
}

// TestDiagnosticsSectionGolden renders a diagnostics section built from fixed
// inputs (hand-made captures, a built SQLite export, a fixed overlap) and compares
// it with testdata/golden/diagnostics.section.md.
func TestDiagnosticsSectionGolden(t *testing.T) {
	a, b := captureDoc(t, "inc-A", 3), captureDoc(t, "inc-B", 2)
	wa, wb := a.Window(), b.Window()
	rows := []TraceCaptureRow{
		{Step: "trace.under_load", Attempt: 1, Status: "succeeded", Target: "flare", Incarnation: "inc-A", Complete: true, Samples: 3, Window: &wa, Overlap: Overlap{Note: OverlapNotRecorded}, capture: a},
		{Step: "trace.short", Attempt: 1, Status: "failed", Class: "instrumentation_incomplete", Message: "trace capture incomplete: dropped: 3 samples were dropped", Target: "flare", Incarnation: "inc-A", Samples: 3, Dropped: 3, Window: &wa, Overlap: Overlap{Note: OverlapNotRecorded}, NotPooled: "incomplete capture"},
		{Step: "trace.after_restart", Attempt: 1, Status: "succeeded", Target: "flare", Incarnation: "inc-B", Complete: true, Samples: 2, Window: &wb, Overlap: Overlap{Note: OverlapNotRecorded}, capture: b},
	}
	pools := poolTraces(rows)
	sqlite := filepath.Join(t.TempDir(), "profile.sqlite")
	if err := nsysdb.Write(sqlite, nsysFixture()); err != nil {
		t.Fatal(err)
	}
	mods, _ := nsys.CompileModules(map[string][]string{"moe": {"W4A16FusedMoe"}, "nccl": {"^nccl"}})
	an, err := nsys.Analyze(sqlite, nsys.Mapping{Modules: mods, RankDevices: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	ov, err := parseOverlap(overlapDoc(`block.primary["flare_instrumented/c4/r2"]`, "2026-10-22T03:00:00Z", "2026-10-22T03:02:00Z", "2026-10-22T03:00:30Z", "2026-10-22T03:00:50Z", true))
	if err != nil {
		t.Fatal(err)
	}
	r1, within := 0.02, true
	dg := &Diagnostics{TraceCaptures: rows, TraceAnalyses: pools, TraceGaps: trace.Gaps, NsightCaveats: NsightCaveats,
		NsightCaptures: []NsightCapture{
			{Step: "nsys.timeline", Attempt: 1, Status: "succeeded", Target: "flare_instrumented", StepWindow: &UTCWindow{"2026-10-22T03:00:30Z", "2026-10-22T03:00:50Z"},
				SQLite: &ArtefactRef{Path: "attempts/nsys.timeline/1/profile.sqlite", SHA256: strings.Repeat("ab", 32)}, Analysis: an,
				ToolWarnings: []string{"nsys-profile stderr: WARNING: CPU context switch tracing not supported, disabling."}, Overlap: ov,
				Control: `block.primary["flare_instrumented/c4/r1"]`,
				Overhead: &Overhead{Profiled: `block.primary["flare_instrumented/c4/r2"]`, Control: `block.primary["flare_instrumented/c4/r1"]`, SameArm: true, SameConcurrency: true, SameCorpus: true, Adjacent: true,
					NoiseBlocks: []string{`block.primary["flare_instrumented/c4/r1"]`, `block.primary["flare_instrumented/c4/r3"]`}, Caveat: ObserverCaveat,
					Metrics: []OverheadMetric{{Metric: "aggregate output tok/s", Profiled: 144.1, Control: 145.9, Difference: 144.1/145.9 - 1, NoiseRange: &r1, WithinNoise: &within},
						{Metric: "TPOT p50 ms", Profiled: 14.2, Control: 14.0, Difference: 14.2/14.0 - 1}}}},
			{Step: "nsys.idle", Attempt: 1, Status: "failed", Class: "tool_missing", Message: "Nsight Systems (\"nsys\") is not on PATH", ToolWarnings: []string{}, Overlap: Overlap{Note: OverlapNotRecorded},
				OverheadNote: "no control block named (control = step.block.X on the nsys step)"},
		}}
	// The section's model is valid summary.json: put it in a checked-in state's summary.
	withDiag := build(t, "clean")
	withDiag.Summary.Diagnostics = dg
	if _, err := withDiag.SummaryJSON(); err != nil {
		t.Fatal(err)
	}
	r := &Report{Summary: Summary{Diagnostics: dg}}
	d := &document{title: "diagnostics section"}
	r.diagnosticsSection(d)
	golden(t, filepath.Join("testdata", "golden", "diagnostics.section.md"), d.markdown())
	for _, want := range []string{"rank times are never summed", "overlapping, not a critical path", ObserverCaveat, "Excluded: 1 capture(s) of another incarnation with 2 samples (inc-B)"} {
		if !strings.Contains(string(d.markdown()), want) {
			t.Errorf("section lacks %q", want)
		}
	}
}

// overheadEvidence is four blocks on one target, in run order A B C D with their
// journal starts at seq 10, 20, 30, 40: aggregate throughput 100, 97, 102, 110 tok/s.
func overheadEvidence(t *testing.T, corpora map[string]string) *evidence {
	t.Helper()
	ev := &evidence{dir: t.TempDir(), startTime: map[string]engine.Record{}, startRecs: map[string][]engine.Record{}, final: map[string]*engine.Record{}}
	tok := map[string]int64{"A": 100, "B": 97, "C": 102, "D": 110}
	for i, name := range []string{"A", "B", "C", "D"} {
		addr := "block." + name
		dir := "attempts/" + addr + "/1"
		if err := os.MkdirAll(filepath.Join(ev.dir, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		tpot := 10 + float64(i)
		start := engine.Record{Seq: 10 * (i + 1), Step: addr, Attempt: 1, Dir: dir}
		end := &engine.Record{Step: addr, Attempt: 1, Dir: dir, Status: engine.StatusSucceeded, Outputs: json.RawMessage(`{"incarnation":"inc-1"}`)}
		ev.startTime[addr+"#1"] = start
		ev.startRecs[addr] = []engine.Record{start}
		ev.final[addr] = end
		ev.blocks = append(ev.blocks, &blockRef{Addr: addr, Conc: 4, Target: map[string]any{"name": "flare"}, End: end,
			attempts: []*attemptRef{{N: 1, corpus: &blockCorpus{SHA256: corpora[name]}}},
			stats:    &blockStats{OK: 10, Completion: tok[name] * 10, CompletedTokens: tok[name] * 10, EndMaxMS: 10_000, TPOTp50: &tpot, TTFTp50: &tpot}})
	}
	return ev
}

func TestObserverOverhead(t *testing.T) {
	same := map[string]string{"A": "c1", "B": "c1", "C": "c1", "D": "c1"}
	profiled := Overlap{Recorded: true, Overlapped: true, Consistent: true, Block: "block.B"}
	cases := map[string]struct {
		corpora  map[string]string
		control  string
		observed []string
		noise    []string
		rangeTok *float64
		adjacent bool
		sameCorp bool
		note     string
	}{
		"a block a trace ran during is not unprofiled": {corpora: same, control: "block.A", observed: []string{"block.B", "block.D"},
			noise: []string{"block.A", "block.C"}, rangeTok: ptr(2.0 / 101), adjacent: true, sameCorp: true},
		"every unprofiled block": {corpora: same, control: "block.A", observed: []string{"block.B"},
			noise: []string{"block.A", "block.C", "block.D"}, rangeTok: ptr(10.0 / (312.0 / 3)), adjacent: true, sameCorp: true},
		"control not adjacent, another corpus": {corpora: map[string]string{"A": "c1", "B": "c1", "C": "c1", "D": "c2"}, control: "block.D", observed: []string{"block.B"},
			noise: []string{"block.D"}, note: "the noise is not estimable"},
		"a control that was observed": {corpora: same, control: "block.C", observed: []string{"block.B", "block.C"},
			note: "block.C is not an unprofiled control: a capture ran during it"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ev := overheadEvidence(t, tc.corpora)
			obs := map[string]bool{}
			for _, o := range tc.observed {
				obs[o] = true
			}
			o, note := ev.overhead(NsightCapture{Control: tc.control, Overlap: profiled}, obs)
			if !strings.Contains(note, tc.note) {
				t.Errorf("note %q, want %q", note, tc.note)
			}
			if tc.noise == nil {
				if o != nil {
					t.Errorf("a comparison against an observed control: %+v", o)
				}
				return
			}
			if o == nil {
				t.Fatalf("no comparison: %s", note)
			}
			if d := cmp.Diff(tc.noise, o.NoiseBlocks); d != "" {
				t.Errorf("noise blocks (-want +got):\n%s", d)
			}
			m := o.Metrics[0]
			wantDiff := 97/(float64(map[string]int{"block.A": 100, "block.C": 102, "block.D": 110}[tc.control])) - 1
			if m.Metric != "aggregate output tok/s" || math.Abs(m.Difference-wantDiff) > 1e-12 || o.Adjacent != tc.adjacent || o.SameCorpus != tc.sameCorp {
				t.Errorf("%+v, adjacent %v, same corpus %v; want difference %g", m, o.Adjacent, o.SameCorpus, wantDiff)
			}
			if (m.NoiseRange == nil) != (tc.rangeTok == nil) || (m.NoiseRange != nil && math.Abs(*m.NoiseRange-*tc.rangeTok) > 1e-12) {
				t.Errorf("noise range %v, want %v", m.NoiseRange, tc.rangeTok)
			}
			if o.Caveat != ObserverCaveat {
				t.Errorf("caveat %q", o.Caveat)
			}
		})
	}
}

func ptr[T any](x T) *T { return &x }

// An overlap.json whose flag its own windows contradict is shown as it is, and is an
// integrity problem.
func TestInconsistentOverlapIsAnIntegrityProblem(t *testing.T) {
	dir := t.TempDir()
	att := "attempts/trace.t/1"
	doc := overlapDoc("block.x", "2026-10-22T03:00:00Z", "2026-10-22T03:02:00Z", "2026-10-22T03:02:01Z", "2026-10-22T03:02:02Z", true)
	if err := os.MkdirAll(filepath.Join(dir, att), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, att, "overlap.json"), doc, 0o644); err != nil {
		t.Fatal(err)
	}
	ev := &evidence{dir: dir}
	end := &engine.Record{Artefacts: []engine.Artefact{{Path: att + "/overlap.json", SHA256: plans.SHA256Hex(doc)}}}
	o := ev.overlap(captureAttempt{addr: "trace.t", n: 1, dir: att, end: end})
	if !o.Recorded || o.Consistent || !o.Overlapped {
		t.Errorf("%+v", o)
	}
	if len(ev.problems) != 1 || !strings.Contains(ev.problems[0], att+"/overlap.json: says it ran within block.x's load, but its windows say otherwise") {
		t.Errorf("problems %q", ev.problems)
	}
}
