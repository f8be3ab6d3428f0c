package report

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rigor-bench/rigor/steps/nsys/nsysdb"
	"github.com/rigor-bench/rigor/steps/trace"
	"github.com/rs/zerolog"
)

// The test binary doubles as Nsight Systems for the diagnostics campaign below (no
// nsys can be installed here): run with RIGOR_FAKE_NSYS=1 it answers `nsys profile`
// (it runs for --duration and writes the report, a warning on stderr) and `nsys
// export` (it hands over a SQLite export the test built with the real table names).
func TestMain(m *testing.M) {
	if os.Getenv("RIGOR_FAKE_NSYS") == "1" {
		os.Exit(fakeNsys(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func fakeNsys(args []string) int {
	if len(args) == 0 {
		return 2
	}
	switch args[0] {
	case "profile":
		out, secs := "", 0
		for _, a := range args {
			if v, ok := strings.CutPrefix(a, "--output="); ok {
				out = v
			}
			if v, ok := strings.CutPrefix(a, "--duration="); ok {
				_, _ = fmt.Sscan(v, &secs)
			}
		}
		fmt.Fprintln(os.Stderr, "WARNING: CPU context switch tracing not supported, disabling.")
		time.Sleep(time.Duration(secs) * time.Second)
		return writeFile(out+".nsys-rep", strings.NewReader("NSYS-REPORT"))
	case "export":
		out := ""
		for i, a := range args {
			if a == "--output" && i+1 < len(args) {
				out = args[i+1]
			}
		}
		fmt.Fprintln(os.Stderr, "Warning: 2 kernels could not be correlated with a launch")
		f, err := os.Open(os.Getenv("FAKE_NSYS_SQLITE"))
		if err != nil {
			return 1
		}
		defer f.Close()
		return writeFile(out, f)
	}
	return 2
}

func writeFile(path string, r io.Reader) int {
	f, err := os.Create(path)
	if err != nil {
		return 1
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return 1
	}
	return 0
}

// diagCampaign: the flare target serves four cold C4 blocks in a row (control0,
// control, profiled, after). Trace captures run during the profiled and the after
// blocks (during = ...), an Nsight capture during the profiled one, naming the
// control. Then another target takes the endpoint over and flare comes back as a
// new incarnation, whose block gets one more trace capture: a record of another
// incarnation. Blocks are about 2 s long, so the 1 s Nsight capture fits in one.
const diagCampaign = `
campaign "diag" {}

host "node" {
  runtime = "sim"
  sim_dir = %[1]q
}

target "flare" {
  host        = host.node
  container   = "diag-flare"
  profile     = "flare"
  endpoint    = "http://%[2]s"
  time_scale  = 0.02
  cache_reset = "/reset_prefix_cache"
}

target "other" {
  host       = host.node
  container  = "diag-other"
  profile    = "incumbent"
  endpoint   = "http://%[2]s"
  time_scale = 0.02
}

workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 7
  nominal_context = 2048
  max_tokens      = 2048
}

step "deploy" "flare" {
  target = target.flare
}

step "block" "control0" {
  target      = target.flare
  workload    = workload.w
  concurrency = 4
  requests    = 320
  reset_cache = true
  uses        = ["gpu"]
  depends_on  = [step.deploy.flare]
}

step "block" "control" {
  target      = target.flare
  workload    = workload.w
  concurrency = 4
  requests    = 320
  reset_cache = true
  uses        = ["gpu"]
  depends_on  = [step.block.control0]
}

step "block" "profiled" {
  target      = target.flare
  workload    = workload.w
  concurrency = 4
  requests    = 320
  reset_cache = true
  uses        = ["gpu"]
  depends_on  = [step.block.control]
}

step "block" "after" {
  target      = target.flare
  workload    = workload.w
  concurrency = 4
  requests    = 320
  reset_cache = true
  uses        = ["gpu"]
  depends_on  = [step.block.profiled]
}

step "trace" "during_profiled" {
  target   = target.flare
  duration = "300ms"
  ranks    = [0, 1]
  uses     = ["trace"]
  phase    = "diagnostic"
  during   = step.block.profiled
  # The block reports its first request before its client has rendered the corpus
  # and dialled; after 4 completed requests the load is certainly there.
  start_after_requests = 4
}

step "trace" "during_after" {
  target               = target.flare
  duration             = "300ms"
  ranks                = [0, 1]
  uses                 = ["trace"]
  phase                = "diagnostic"
  during               = step.block.after
  start_after_requests = 8
}

step "nsys" "timeline" {
  target       = target.flare
  where        = "host"
  nsys         = %[3]q
  command      = ["sleep", "1"]
  duration     = "1s"
  uses         = ["nsys"]
  phase        = "diagnostic"
  during       = step.block.profiled
  control      = step.block.control
  start_after_requests = 4
  modules      = { moe = ["W4A16FusedMoe"], nccl = ["^nccl"], attention = ["^flash_"] }
  rank_devices = [0, 1]
  env = {
    RIGOR_FAKE_NSYS  = "1"
    FAKE_NSYS_SQLITE = %[4]q
  }
}

step "deploy" "other" {
  target     = target.other
  depends_on = [step.block.after, step.trace.during_profiled, step.trace.during_after, step.nsys.timeline]
}

step "deploy" "flare_again" {
  target     = target.flare
  depends_on = [step.deploy.other]
}

step "block" "again" {
  target      = target.flare
  workload    = workload.w
  concurrency = 4
  requests    = 320
  uses        = ["gpu"]
  depends_on  = [step.deploy.flare_again]
}

step "trace" "new_incarnation" {
  target   = target.flare
  duration = "300ms"
  ranks    = [0, 1]
  uses     = ["trace"]
  phase    = "diagnostic"
  during   = step.block.again
  start_after_requests = 4
}
`

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// runDiagCampaign applies diagCampaign and returns its state directory.
func runDiagCampaign(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	simDir, state := filepath.Join(dir, "sim"), filepath.Join(dir, "state")
	h, err := sim.OpenHost("node", simDir)
	if err != nil {
		t.Fatal(err)
	}
	simtest.Cleanup(t, h)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sqlite := filepath.Join(dir, "export.sqlite")
	f := nsysFixture()
	if err := nsysdb.Write(sqlite, f); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(diagCampaign, simDir, freeAddr(t), exe, sqlite)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sum, err := engine.Apply(ctx, p, steps.Registry(), engine.Options{StateDir: state, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "completed" || sum.Counts[engine.StatusSucceeded] != len(p.Instances) {
		recs, _, _ := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
		for _, r := range recs {
			if r.Kind == engine.KindStepEnd && r.Status != engine.StatusSucceeded {
				t.Errorf("%s %s (%s): %s", r.Step, r.Status, r.Class, r.Message)
			}
		}
		for _, r := range recs {
			t.Logf("%s %s %s %s", r.Time.Format("15:04:05.000"), r.Kind, r.Step, r.Status)
		}

		t.Fatalf("campaign %s: %v", sum.Status, sum.Counts)
	}
	if d := os.Getenv("KEEP_DIAG"); d != "" {
		_ = os.RemoveAll(d)
		t.Log(os.CopyFS(d, os.DirFS(state)))
	}
	return state
}

// nsysFixture is the export the fake nsys hands over: two ranks, MoE, NCCL,
// attention and one unmapped kernel; 40 ms of kernel time, 2 ms unmapped.
func nsysFixture() nsysdb.Fixture {
	const s, ms = int64(1_000_000_000), int64(time.Millisecond)
	moe := "void b12x::W4A16FusedMoeKernel<128>(...)"
	return nsysdb.Fixture{
		Version: "2026.1.1.204", SessionStart: time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC), Start: s, Stop: 2 * s,
		GPUs:   []nsysdb.GPU{{ID: 0, CudaID: 0, Name: "RTX PRO 6000"}, {ID: 1, CudaID: 1, Name: "RTX PRO 6000"}},
		Ranges: []nsysdb.Range{{Start: s, End: s + 50*ms, Pid: 1, Tid: 2, Text: "speculative 4x3"}, {Start: s, End: s + 50*ms, Pid: 3, Tid: 4, Text: "speculative 4x3"}},
		Kernels: []nsysdb.Kernel{
			{Start: s + ms, End: s + 13*ms, Device: 0, Name: moe, Pid: 1, Tid: 2, LaunchAt: s + ms/2},
			{Start: s + ms, End: s + 13*ms, Device: 1, Name: moe, Pid: 3, Tid: 4, LaunchAt: s + ms/2},
			{Start: s + 13*ms, End: s + 17*ms, Device: 0, Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Pid: 1, Tid: 2, LaunchAt: s + ms},
			{Start: s + 13*ms, End: s + 17*ms, Device: 1, Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Pid: 3, Tid: 4, LaunchAt: s + ms},
			{Start: s + 17*ms, End: s + 23*ms, Device: 0, Name: "flash_fwd_splitkv_kernel", Pid: 1, Tid: 2, LaunchAt: s + 2*ms},
			{Start: s + 23*ms, End: s + 25*ms, Device: 0, Name: "elementwise_kernel", Pid: 1, Tid: 2, LaunchAt: s + 3*ms},
		},
		Diagnostics: []nsysdb.Diagnostic{{At: s, Severity: 2, Text: "CUDA device 1: GPU metrics sampling requires root"}},
	}
}

// rawCapture is raw.json of a trace attempt, read by the test on its own.
type rawCapture struct {
	Incarnation struct{ Before string } `json:"incarnation"`
	Clock       struct {
		Before, After struct {
			MonoNS int64     `json:"mono_ns"`
			UTC    time.Time `json:"utc"`
		}
	} `json:"clock"`
	Graphs []struct {
		Index       int
		Kind, Shape string
	} `json:"graphs"`
	Samples []struct {
		Graph          int   `json:"graph"`
		ScheduledLanes int   `json:"scheduled_lanes"`
		Queued         bool  `json:"queued"`
		SelectedAtNS   int64 `json:"selected_at_ns"`
		Selection      struct {
			ObservedAtNS int64 `json:"observed_at_ns"`
		} `json:"selection"`
		PriorPresent bool `json:"prior_observation_present"`
		Ranks        []struct {
			StartNS int64 `json:"start_ns"`
			EndNS   int64 `json:"end_ns"`
		} `json:"ranks"`
	} `json:"samples"`
}

func readRaw(t *testing.T, state, step string) rawCapture {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "attempts", step, "1", "raw.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c rawCapture
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func deployIncarnation(t *testing.T, r *Report, addr string) string {
	t.Helper()
	inc := text(r.ev.stepOutputs(addr)["incarnation"])
	if inc == "" {
		t.Fatalf("%s recorded no incarnation", addr)
	}
	return inc
}

func p50of(xs []float64) float64 {
	s := slices.Clone(xs)
	sort.Float64s(s)
	return loadgen.Percentile(s, 0.5)
}

// TestDiagnosticsFromSimulatorCampaign applies the diagnostics campaign on the
// simulator and checks the report's diagnostics against the kept files, read here on
// their own.
func TestDiagnosticsFromSimulatorCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("applies a campaign on the simulator")
	}
	state := runDiagCampaign(t)
	r, err := Build(state)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatalf("summary.json with diagnostics: %v", err)
	}
	if len(r.Summary.Integrity) != 0 {
		t.Fatalf("integrity problems: %v", r.Summary.Integrity)
	}
	dg := r.Summary.Diagnostics
	if dg == nil || len(dg.TraceCaptures) != 3 || len(dg.TraceAnalyses) != 1 || len(dg.NsightCaptures) != 1 {
		t.Fatalf("diagnostics: %+v", dg)
	}
	md := string(r.document(nil).markdown())
	if html := string(r.document(nil).html(nil)); !strings.Contains(html, `<section id="diagnostics">`) || !strings.Contains(html, "rank times are never summed") {
		t.Error("report.html lacks the diagnostics section")
	}

	t.Run("incarnation filter", func(t *testing.T) {
		first, again := deployIncarnation(t, r, "deploy.flare"), deployIncarnation(t, r, "deploy.flare_again")
		if first == again {
			t.Fatal("flare came back as the same incarnation")
		}
		p := dg.TraceAnalyses[0]
		excluded := readRaw(t, state, "trace.new_incarnation")
		if len(p.Overlapping) != 0 {
			t.Errorf("sequential captures reported as overlapping: %v", p.Overlapping)
		}
		if p.Incarnation != first || p.ExcludedCaptures != 1 || p.ExcludedSamples != len(excluded.Samples) || !slices.Equal(p.ExcludedIncarnations, []string{again}) {
			t.Errorf("pooled %s, excluded %d capture(s) with %d samples of %v; want %s pooled and 1 capture with %d samples of %s excluded",
				p.Incarnation, p.ExcludedCaptures, p.ExcludedSamples, p.ExcludedIncarnations, first, len(excluded.Samples), again)
		}
		for _, c := range dg.TraceCaptures {
			if (c.Step == "trace.new_incarnation") == c.Pooled {
				t.Errorf("%s pooled = %v (%s)", c.Step, c.Pooled, c.NotPooled)
			}
		}
		if !strings.Contains(md, fmt.Sprintf("incarnation %s: 2 capture(s) pooled", first)) || !strings.Contains(md, fmt.Sprintf("Excluded: 1 capture(s) of another incarnation with %d samples (%s)", len(excluded.Samples), again)) {
			t.Errorf("report.md does not say which incarnation is pooled and what was excluded")
		}
	})

	t.Run("grouped table and rank maxima", func(t *testing.T) {
		// Recompute the groups from raw.json of the two pooled captures.
		type key struct {
			graph, lanes int
			queued       bool
		}
		maxRank := map[key][]float64{}
		var all []float64
		for _, step := range []string{"trace.during_profiled", "trace.during_after"} {
			c := readRaw(t, state, step)
			for _, s := range c.Samples {
				var m int64
				for _, rk := range s.Ranks {
					m = max(m, rk.EndNS-rk.StartNS)
				}
				k := key{s.Graph, s.ScheduledLanes, s.Queued}
				maxRank[k] = append(maxRank[k], float64(m)/1e6)
				all = append(all, float64(m)/1e6)
			}
		}
		a := dg.TraceAnalyses[0].Analysis
		if a.Samples != len(all) || len(a.Groups) != len(maxRank) {
			t.Fatalf("%d samples in %d groups; raw.json has %d in %d", a.Samples, len(a.Groups), len(all), len(maxRank))
		}
		for _, g := range a.Groups {
			want := maxRank[key{g.Graph, g.Lanes, g.Queued}]
			if g.Samples != len(want) || math.Abs(g.MaxRankMS.P50-p50of(want)) > 1e-12 {
				t.Errorf("group %d %s %s lanes %d queued %v: %d samples, max-rank p50 %g; raw.json: %d, %g", g.Graph, g.Kind, g.Shape, g.Lanes, g.Queued, g.Samples, g.MaxRankMS.P50, len(want), p50of(want))
			}
			if len(g.Ranks) != 2 {
				t.Errorf("group %d: ranks %+v; both ranks are summarised apart", g.Graph, g.Ranks)
			}
			// The flare frame model at 4 lanes: seed 002's 22.683 ms, at time scale 0.02.
			if g.Kind == "speculative" && g.Lanes == 4 && !g.Queued && math.Abs(g.MaxRankMS.P50/(22.683*0.02)-1) > 0.05 {
				t.Errorf("speculative 4-lane max-rank p50 %g ms; seed 002's 22.683 ms at time scale 0.02 is %g", g.MaxRankMS.P50, 22.683*0.02)
			}
		}
		if math.Abs(a.MaxRankMS.P50-p50of(all)) > 1e-12 {
			t.Errorf("max-rank p50 over all samples %g, raw.json %g", a.MaxRankMS.P50, p50of(all))
		}
		for _, want := range []string{"Samples grouped by runtime graph, scheduled physical lane count and the queued flag", "rank times are never summed", " speculative 4x3 | 4 / 16 / 0 | 4 | no |"} {
			if !strings.Contains(md, want) {
				t.Errorf("report.md lacks %q", want)
			}
		}
	})

	t.Run("retained cost and observation ages", func(t *testing.T) {
		queued, unqueued := false, false
		var ages []float64
		for _, step := range []string{"trace.during_profiled", "trace.during_after"} {
			for _, s := range readRaw(t, state, step).Samples {
				if s.PriorPresent {
					ages = append(ages, float64(s.SelectedAtNS-s.Selection.ObservedAtNS)/1e6)
				}
			}
		}
		n := 0
		for _, g := range dg.TraceAnalyses[0].Analysis.Groups {
			want := trace.RefMaxRankWall
			if g.Queued {
				want, queued = trace.RefMaxRank, true
			} else {
				unqueued = true
			}
			if g.Reference != want {
				t.Errorf("group %d queued %v compared with %q, want %q", g.Graph, g.Queued, g.Reference, want)
			}
			n += g.AgeMS.N
		}
		if !queued || !unqueued {
			t.Errorf("queued groups %v, unqueued %v: the C4 blocks admit lanes, so both appear", queued, unqueued)
		}
		if n != len(ages) || n == 0 {
			t.Errorf("%d ages in the groups, raw.json has %d samples with a prior observation", n, len(ages))
		}
		if !strings.Contains(md, "Prior-observation age p50 / max") || !strings.Contains(md, "max(max-rank GPU interval, host wall)") {
			t.Error("report.md lacks the retained-cost table")
		}
	})

	t.Run("alignment bound and overlap", func(t *testing.T) {
		for _, c := range dg.TraceCaptures {
			raw := readRaw(t, state, c.Step)
			b, a := raw.Clock.Before, raw.Clock.After
			want := int64((a.UTC.Sub(b.UTC) - time.Duration(a.MonoNS-b.MonoNS)).Abs())
			if c.Window == nil || c.Window.AlignmentBoundNS != want {
				t.Errorf("%s: alignment bound %+v, anchors give %d ns", c.Step, c.Window, want)
			}
			host := map[string]string{"trace.during_profiled": "block.profiled", "trace.during_after": "block.after", "trace.new_incarnation": "block.again"}[c.Step]
			if o := c.Overlap; !o.Recorded || !o.Overlapped || !o.Consistent || o.Block != host || o.OverlapS <= 0 {
				t.Errorf("%s: overlap %+v; the engine ran it within %s's load", c.Step, o, host)
			}
		}
		after := dg.TraceCaptures[1].Overlap
		if after.Declared != "after 8 completed requests" || after.RequestsDone < 8 {
			t.Errorf("trace.during_after: %+v; declared to start after 8 completed requests", after)
		}
		if !strings.Contains(md, "UTC alignment bound") || !strings.Contains(md, "ran within block.profiled's load (after 4 completed requests)") {
			t.Error("report.md lacks the alignment bound or the overlap column")
		}
		o := dg.NsightCaptures[0].Overlap
		if !o.Recorded || !o.Overlapped || !o.Consistent || o.Block != "block.profiled" || o.OverlapS < 1 {
			t.Errorf("nsys overlap %+v", o)
		}
	})

	t.Run("nsight", func(t *testing.T) {
		c := dg.NsightCaptures[0]
		a := c.Analysis
		if a == nil {
			t.Fatalf("no analysis: %s", c.AnalysisError)
		}
		var mods []string
		for _, m := range a.Modules {
			mods = append(mods, fmt.Sprintf("%s %d %.3f", m.Name, m.Kernels, m.SummedKernelMS))
		}
		if !slices.Equal(mods, []string{"moe 2 24.000", "nccl 2 8.000", "attention 1 6.000"}) || a.UnmappedFraction != 2.0/40 || a.SummedKernelMS != 40 {
			t.Errorf("modules %v, unmapped %g of %g ms", mods, a.UnmappedFraction, a.SummedKernelMS)
		}
		if len(a.Devices) != 2 || !strings.HasPrefix(a.Devices[0].Name, "rank 0: device 0") {
			t.Errorf("devices %+v", a.Devices)
		}
		if len(c.ToolWarnings) != 2 || len(a.Warnings) != 1 {
			t.Errorf("warnings: nsys %v, export %v", c.ToolWarnings, a.Warnings)
		}
		for _, want := range []string{"Summed kernel ms (overlapping)", "Unmapped fraction: 5.00%", "| (unmapped) | 1 | 2.000 | 5.00% |", "not shares of a critical path", "GPU metrics sampling requires root"} {
			if !strings.Contains(md, want) {
				t.Errorf("report.md lacks %q", want)
			}
		}
	})

	t.Run("observer overhead", func(t *testing.T) {
		o := dg.NsightCaptures[0].Overhead
		if o == nil {
			t.Fatalf("no comparison: %s", dg.NsightCaptures[0].OverheadNote)
		}
		if o.Profiled != "block.profiled" || o.Control != "block.control" || !o.SameArm || !o.SameConcurrency || !o.SameCorpus || !o.Adjacent {
			t.Errorf("comparison %+v", o)
		}
		if !slices.Equal(o.NoiseBlocks, []string{"block.control0", "block.control"}) {
			t.Errorf("noise blocks %v: the unprofiled blocks of the same target, concurrency, corpus and incarnation (a trace ran during block.after; block.again ran in another incarnation)", o.NoiseBlocks)
		}
		res := func(step string) loadgen.Result {
			var x loadgen.Result
			b, _ := os.ReadFile(filepath.Join(state, "attempts", step, "1", "result.json"))
			if err := json.Unmarshal(b, &x); err != nil {
				t.Fatal(err)
			}
			return x
		}
		p, c, af := res("block.profiled"), res("block.control"), res("block.control0")
		m := o.Metrics[0]
		rangeWant := math.Abs(c.AggregateOutputTokS-af.AggregateOutputTokS) / ((c.AggregateOutputTokS + af.AggregateOutputTokS) / 2)
		if m.Metric != "aggregate output tok/s" || math.Abs(m.Difference-(p.AggregateOutputTokS/c.AggregateOutputTokS-1)) > 1e-9 || m.NoiseRange == nil || math.Abs(*m.NoiseRange-rangeWant) > 1e-9 {
			t.Errorf("throughput comparison %+v; result.json gives %g vs %g, range %g", m, p.AggregateOutputTokS, c.AggregateOutputTokS, rangeWant)
		}
		if !strings.Contains(md, ObserverCaveat) || !strings.Contains(md, "Observer overhead: profiled block block.profiled against its unprofiled control block.control") {
			t.Error("report.md lacks the comparison or seed 000's caveat")
		}
	})
}
