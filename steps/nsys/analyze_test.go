package nsys

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rigor-bench/rigor/steps/nsys/nsysdb"
)

const ms = int64(time.Millisecond)

// tp2Fixture is two ranks (processes 100 and 200 on devices 0 and 1) running one
// speculative frame each, a mixed frame on rank 0, a kernel from a CUDA graph outside
// any range and a kernel whose launch record is missing. 60 ms of kernel time.
func tp2Fixture() nsysdb.Fixture {
	g9 := int64(9)
	const s = int64(1_000_000_000)
	return nsysdb.Fixture{
		Version:      "2026.1.1.204",
		SessionStart: time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC),
		Start:        s, Stop: 3 * s,
		GPUs: []nsysdb.GPU{{ID: 0, CudaID: 0, Name: "RTX PRO 6000 Blackwell Max-Q"}, {ID: 1, CudaID: 1, Name: "RTX PRO 6000 Blackwell Max-Q"}},
		Ranges: []nsysdb.Range{
			{Start: s + 100*ms, End: s + 130*ms, Pid: 100, Tid: 101, Text: "speculative 4x3"},
			{Start: s + 200*ms, End: s + 250*ms, Pid: 100, Tid: 101, Text: "mixed 4x3+p2048", Registered: true},
			{Start: s + 100*ms, End: s + 130*ms, Pid: 200, Tid: 201, Text: "speculative 4x3"},
		},
		Kernels: []nsysdb.Kernel{
			{Start: s + 101*ms, End: s + 111*ms, Device: 0, Name: "void b12x::W4A16FusedMoeKernel<128>(...)", Short: "W4A16FusedMoeKernel", Pid: 100, Tid: 101, LaunchAt: s + 100*ms + 500_000},
			{Start: s + 111*ms, End: s + 115*ms, Device: 0, Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Pid: 100, Tid: 101, LaunchAt: s + 100*ms + 600_000},
			{Start: s + 101*ms + 500_000, End: s + 112*ms + 500_000, Device: 1, Name: "void b12x::W4A16FusedMoeKernel<128>(...)", Short: "W4A16FusedMoeKernel", Pid: 200, Tid: 201, LaunchAt: s + 100*ms + 500_000},
			{Start: s + 112*ms + 500_000, End: s + 116*ms + 500_000, Device: 1, Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Pid: 200, Tid: 201, LaunchAt: s + 100*ms + 700_000},
			{Start: s + 201*ms, End: s + 221*ms, Device: 0, Name: "flash_fwd_splitkv_kernel", Pid: 100, Tid: 101, LaunchAt: s + 200*ms + 500_000},
			{Start: s + 221*ms, End: s + 223*ms, Device: 0, Name: "elementwise_kernel", Pid: 100, Tid: 101, LaunchAt: s + 200*ms + 600_000},
			{Start: s + 500*ms, End: s + 503*ms, Device: 1, Name: "elementwise_kernel", Pid: 200, Tid: 201, LaunchAt: s + 490*ms, GraphID: &g9},
			{Start: s + 600*ms, End: s + 606*ms, Device: 1, Name: "void b12x::W4A16FusedMoeKernel<128>(...)", Pid: 200, Tid: 201},
		},
		Diagnostics: []nsysdb.Diagnostic{
			{At: s, Severity: 1, Text: "Profiling started"},
			{At: s + 1, Severity: 2, Text: "CPU context switch tracing not supported, disabling."},
			{At: s + 2, Severity: 3, Text: "Some CUDA events were lost: buffer full"},
		},
	}
}

func writeFixture(t *testing.T, f nsysdb.Fixture) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profile.sqlite")
	if err := nsysdb.Write(path, f); err != nil {
		t.Fatal(err)
	}
	return path
}

func tp2Modules(t *testing.T) []Module {
	t.Helper()
	m, err := CompileModules(map[string][]string{"moe": {"W4A16FusedMoe"}, "nccl": {"^nccl"}, "attention": {"^flash_"}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestAnalyzeTP2Export(t *testing.T) {
	got, err := Analyze(writeFixture(t, tp2Fixture()), Mapping{Modules: tp2Modules(t), RankDevices: []int{0, 1}})
	if err != nil {
		t.Fatal(err)
	}
	gpu := "(RTX PRO 6000 Blackwell Max-Q)"
	want := &Analysis{
		ExportVersion: "2026.1.1.204",
		Interval:      Interval{StartUTC: "2026-10-22T03:00:01Z", EndUTC: "2026-10-22T03:00:03Z", DurationS: 2},
		KernelSpanS:   0.505, Kernels: 8, SummedKernelMS: 60,
		Modules: []Share{
			{Name: "moe", Kernels: 3, SummedKernelMS: 27, Fraction: 27.0 / 60},
			{Name: "attention", Kernels: 1, SummedKernelMS: 20, Fraction: 20.0 / 60},
			{Name: "nccl", Kernels: 2, SummedKernelMS: 8, Fraction: 8.0 / 60},
		},
		Unmapped:         Share{Name: "(unmapped)", Kernels: 2, SummedKernelMS: 5, Fraction: 5.0 / 60},
		UnmappedFraction: 5.0 / 60,
		RankMapped:       true,
		Devices: []Share{
			{Name: "rank 0: device 0 " + gpu, Kernels: 4, SummedKernelMS: 36, Fraction: 0.6},
			{Name: "rank 1: device 1 " + gpu, Kernels: 4, SummedKernelMS: 24, Fraction: 0.4},
		},
		Graphs: []Share{
			{Name: "speculative 4x3", Kernels: 4, SummedKernelMS: 29, Fraction: 29.0 / 60},
			{Name: "mixed 4x3+p2048", Kernels: 2, SummedKernelMS: 22, Fraction: 22.0 / 60},
			{Name: NoGraph, Kernels: 1, SummedKernelMS: 6, Fraction: 0.1},
			{Name: "CUDA graph 9", Kernels: 1, SummedKernelMS: 3, Fraction: 0.05},
		},
		GraphUnmappedFraction: 0.1,
		TopKernels: []Share{
			{Name: "void b12x::W4A16FusedMoeKernel<128>(...)", Kernels: 3, SummedKernelMS: 27, Fraction: 27.0 / 60},
			{Name: "flash_fwd_splitkv_kernel", Kernels: 1, SummedKernelMS: 20, Fraction: 20.0 / 60},
			{Name: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", Kernels: 2, SummedKernelMS: 8, Fraction: 8.0 / 60},
			{Name: "elementwise_kernel", Kernels: 2, SummedKernelMS: 5, Fraction: 5.0 / 60},
		},
		Warnings: []string{"Warning: CPU context switch tracing not supported, disabling.", "Error: Some CUDA events were lost: buffer full"},
		Notes:    []string{},
	}
	if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("analysis (-want +got):\n%s", d)
	}
}

// What the export lacks is said, and attribution falls back to what remains.
func TestAnalyzeMissingTables(t *testing.T) {
	cases := map[string]struct {
		change    func(*nsysdb.Fixture)
		mapping   Mapping
		note      string
		graphs    []string // graph names, largest first
		devices   []string
		ambiguous int
	}{
		"no NVTX": {
			change: func(f *nsysdb.Fixture) { f.Omit = []string{"NVTX_EVENTS"} },
			note:   "no NVTX_EVENTS table", graphs: []string{NoGraph, "CUDA graph 9"},
			devices: []string{"device 0 (RTX PRO 6000 Blackwell Max-Q)", "device 1 (RTX PRO 6000 Blackwell Max-Q)"},
		},
		"no runtime records": {
			change: func(f *nsysdb.Fixture) { f.Omit = []string{"CUPTI_ACTIVITY_KIND_RUNTIME"} },
			note:   "no CUPTI_ACTIVITY_KIND_RUNTIME table", graphs: []string{NoGraph, "CUDA graph 9"},
			devices: []string{"device 0 (RTX PRO 6000 Blackwell Max-Q)", "device 1 (RTX PRO 6000 Blackwell Max-Q)"},
		},
		"old export without graphId, one rank declared": {
			change: func(f *nsysdb.Fixture) {
				f.NoGraphIDColumn = true
				f.Omit = []string{"TARGET_INFO_CUDA_DEVICE", "TARGET_INFO_SESSION_START_TIME"}
			},
			mapping: Mapping{RankDevices: []int{1}},
			note:    "not placed on UTC", graphs: []string{"speculative 4x3", "mixed 4x3+p2048", NoGraph},
			devices: []string{"device 0 (RTX PRO 6000 Blackwell Max-Q): no rank declared for this device", "rank 0: device 1 (RTX PRO 6000 Blackwell Max-Q)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := tp2Fixture()
			tc.change(&f)
			a, err := Analyze(writeFixture(t, f), tc.mapping)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(strings.Join(a.Notes, "\n"), tc.note) {
				t.Errorf("notes %q lack %q", a.Notes, tc.note)
			}
			var graphs, devices []string
			for _, g := range a.Graphs {
				graphs = append(graphs, g.Name)
			}
			for _, d := range a.Devices {
				devices = append(devices, d.Name)
			}
			if d := cmp.Diff(tc.graphs, graphs); d != "" {
				t.Errorf("graphs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.devices, devices); d != "" {
				t.Errorf("devices (-want +got):\n%s", d)
			}
			if a.SummedKernelMS != 60 || a.UnmappedFraction != 1 {
				t.Errorf("summed %g ms, unmapped %g: with no module declared every kernel is unmapped", a.SummedKernelMS, a.UnmappedFraction)
			}
		})
	}
}

func TestAnalyzeAmbiguousModules(t *testing.T) {
	mods, err := CompileModules(map[string][]string{"fused": {"Fused"}, "moe": {"W4A16FusedMoe"}})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(writeFixture(t, tp2Fixture()), Mapping{Modules: mods})
	if err != nil {
		t.Fatal(err)
	}
	if a.AmbiguousKernels != 3 || len(a.Modules) != 1 || a.Modules[0].Name != "fused" || a.Modules[0].SummedKernelMS != 27 {
		t.Errorf("ambiguous %d, modules %+v: the three MoE kernels match both and count in the first by name", a.AmbiguousKernels, a.Modules)
	}
}

func TestAnalyzeRefusesWhatIsNotAnExport(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.sqlite")
	if err := os.WriteFile(junk, []byte("SQLite format 3"), 0o644); err != nil {
		t.Fatal(err)
	}
	noKernels := tp2Fixture()
	noKernels.Omit = []string{"CUPTI_ACTIVITY_KIND_KERNEL"}
	cases := map[string]struct{ path, want string }{
		"not SQLite":   {junk, "not a readable SQLite export"},
		"no kernels":   {writeFixture(t, noKernels), "no CUPTI_ACTIVITY_KIND_KERNEL table"},
		"no such file": {filepath.Join(t.TempDir(), "absent.sqlite"), "absent.sqlite"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Analyze(tc.path, Mapping{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want one mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCompileModules(t *testing.T) {
	cases := map[string]struct {
		in   map[string][]string
		want string
	}{
		"bad pattern": {map[string][]string{"moe": {"W4A16(Fused"}}, `module "moe": pattern "W4A16(Fused"`},
		"no pattern":  {map[string][]string{"moe": {}}, `module "moe" has no pattern`},
		"empty name":  {map[string][]string{" ": {"x"}}, "module name is empty"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := CompileModules(tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
		})
	}
}

// A kernel belongs to the innermost NVTX range open on the thread that launched it:
// a step range inside a frame range takes the kernels launched within it, the frame
// the rest, and a range on another thread of the same process takes none of them.
func TestAnalyzeNestedRangesInnermostOnTheLaunchingThread(t *testing.T) {
	const s = int64(1_000_000_000)
	f := nsysdb.Fixture{
		Version:      "2026.1.1.204",
		SessionStart: time.Date(2026, 10, 22, 3, 0, 0, 0, time.UTC),
		Start:        s, Stop: 2 * s,
		GPUs: []nsysdb.GPU{{ID: 0, CudaID: 0, Name: "H200"}},
		Ranges: []nsysdb.Range{
			{Start: s + 100*ms, End: s + 300*ms, Pid: 100, Tid: 101, Text: "frame"},
			{Start: s + 150*ms, End: s + 200*ms, Pid: 100, Tid: 101, Text: "attention step"},
			{Start: s + 100*ms, End: s + 300*ms, Pid: 100, Tid: 102, Text: "other thread"},
		},
		Kernels: []nsysdb.Kernel{
			{Start: s + 161*ms, End: s + 171*ms, Device: 0, Name: "flash_fwd_kernel", Pid: 100, Tid: 101, LaunchAt: s + 160*ms},
			{Start: s + 251*ms, End: s + 255*ms, Device: 0, Name: "elementwise_kernel", Pid: 100, Tid: 101, LaunchAt: s + 250*ms},
			{Start: s + 121*ms, End: s + 123*ms, Device: 0, Name: "elementwise_kernel", Pid: 100, Tid: 101, LaunchAt: s + 120*ms},
		},
	}
	got, err := Analyze(writeFixture(t, f), Mapping{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Share{
		{Name: "attention step", Kernels: 1, SummedKernelMS: 10, Fraction: 10.0 / 16},
		{Name: "frame", Kernels: 2, SummedKernelMS: 6, Fraction: 6.0 / 16},
	}
	if d := cmp.Diff(want, got.Graphs, cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("kernels by range (-want +got):\n%s", d)
	}
}
