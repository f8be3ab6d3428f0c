package sim

import (
	mrand "math/rand/v2"
	"net/http"
	"time"

	"github.com/rigor-bench/rigor/steps/nsys/nsysdb"
)

// The simulated Nsight Systems capture, POST /debug/nsys-profile?duration=1s: no
// CUDA runs here, so the server profiles the work it does itself. For the window it
// runs the scheduler-trace frame model (trace.go) over the requests it is serving,
// as an observer that leaves the retained cost observations alone, and turns every
// frame into what `nsys export --type sqlite` would hold for it (nsysdb.Fixture):
//
//   - per rank (CUDA device r, its own worker process), one NVTX range over the
//     frame's host wall interval named after the graph ("speculative 4x3"), one
//     cudaLaunchKernel call at the frame's launch, and the frame's GPU interval on
//     that rank split into kernels back to back on one stream, in the shares of
//     simKernels with a seeded ±10% wobble each; a mixed frame adds a prefill
//     attention kernel (its extra GPU time);
//   - the export's warnings: one informational-level-above (warning) event that
//     says the capture is simulated, so no reader of the export alone can take it
//     for a CUDA trace;
//   - the session clock starts at the window's start; ANALYSIS_DETAILS spans the
//     window.
//
// The answer also carries how many requests the server completed during the window.
// An idle server runs no frame and the export has no kernel.
//
// Observer overhead: while a capture runs, requests that arrive are slowed by
// NsysObserverOverhead (CUPTI's kernel tracing lengthens launches); a profiled block
// is therefore a little slower than its unprofiled control, as on real hardware.

// NsysObserverOverhead multiplies the delays of requests that arrive while a
// simulated Nsight capture runs.
const NsysObserverOverhead = 1.04

// NsysProfileFormat names the answer's format.
const NsysProfileFormat = "rigor.sim-nsys-profile.v1"

// simKernel is one kernel of a frame and its share of the frame's GPU time.
type simKernel struct {
	name  string
	share float64
}

var simKernels = []simKernel{
	{"flash_fwd_splitkv_kernel<cutlass::bfloat16_t, 128, 64>", 0.24},
	{"W4A16FusedMoeKernel<256, 8, true>", 0.42},
	{"cutlass_fp4_gemm_sm120_128x128x256", 0.12},
	{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 0.14},
	{"fused_add_rmsnorm_kernel<bfloat16, 8>", 0.05},
	{"mtp_draft_accept_kernel", 0.03},
}

// simPrefillKernel is a mixed frame's extra kernel.
const simPrefillKernel = "flash_fwd_prefill_chunk_kernel<cutlass::bfloat16_t, 128, 2048>"

// NsysProfile is the endpoint's answer.
type NsysProfile struct {
	Format      string `json:"format"`
	Source      string `json:"source"`
	Model       string `json:"model"`
	Simulated   bool   `json:"simulated"`
	Incarnation struct {
		Before string `json:"before"`
		After  string `json:"after"`
	} `json:"incarnation"`
	RequestedDurationNS int64 `json:"requested_duration_ns"`
	// RequestsCompleted counts the requests the server finished during the window.
	RequestsCompleted int64          `json:"requests_completed"`
	Frames            int            `json:"frames"`
	Export            nsysdb.Fixture `json:"export"`
}

// Process and thread IDs of the simulated rank workers.
const simRankPid, simRankTid = 4100, 4101

func (s *Server) serveNsysProfile(w http.ResponseWriter, r *http.Request) {
	d, ok := captureDuration(w, r)
	if !ok {
		return
	}
	p := &NsysProfile{Format: NsysProfileFormat, Source: "rigor-sim/" + s.cfg.Profile.Name, Model: s.cfg.ModelName, Simulated: true, RequestedDurationNS: int64(d)}
	p.Incarnation.Before = s.cfg.Incarnation
	c := &TraceCapture{Capacity: TraceCapacity}
	tr := s.newObserver(c)
	s.profiling.Add(1)
	defer s.profiling.Add(-1)
	doneBefore := s.m.finishedTotal()
	start := time.Now()
	end, ok := s.runTracer(w, r, tr, start, d)
	if !ok {
		return
	}
	p.RequestsCompleted = s.m.finishedTotal() - doneBefore
	p.Incarnation.After = s.cfg.Incarnation
	p.Frames = len(c.Samples)
	p.Export = s.kernelExport(c, tr, start, end)
	writeJSON(w, http.StatusOK, p)
}

// observerOverhead is the slowdown of a request that arrives now.
func (s *Server) observerOverhead() float64 {
	if s.profiling.Load() > 0 {
		return NsysObserverOverhead
	}
	return 1
}

// newObserver is a tracer for the simulated Nsight capture: its own seed sequence,
// so profiling does not change the draws of later trace captures.
func (s *Server) newObserver(c *TraceCapture) *tracer {
	mem := s.traceMemory()
	mem.mu.Lock()
	mem.profiles++
	n := mem.profiles
	mem.mu.Unlock()
	return &tracer{s: s, c: c, mem: mem, scale: s.cfg.TimeScale * s.Faults().slowdown(),
		rng: mrand.New(mrand.NewPCG(s.cfg.Seed^0x6e737973, n)), used: map[int]TraceGraph{}, observer: true}
}

// kernelExport turns the frames of c into an export on a session clock that starts
// at start.
func (s *Server) kernelExport(c *TraceCapture, tr *tracer, start, end time.Time) nsysdb.Fixture {
	origin := monoNS(start)
	f := nsysdb.Fixture{
		Version:      "rigor-sim " + s.cfg.Profile.Name + " (simulated Nsight Systems export)",
		SessionStart: start.UTC(),
		Start:        0,
		Stop:         monoNS(end) - origin,
		Kernels:      []nsysdb.Kernel{},
		Ranges:       []nsysdb.Range{},
		Diagnostics: []nsysdb.Diagnostic{{At: 0, Severity: 2,
			Text: "rigor-sim: simulated capture: kernels are derived from the simulator's timing model for the frames it ran, not traced by CUPTI"}},
	}
	for r := range TraceRanks {
		f.GPUs = append(f.GPUs, nsysdb.GPU{ID: r, CudaID: r, Name: "rigor-sim GPU (simulated)"})
	}
	graphs := map[int]TraceGraph{}
	for _, g := range tr.graphTable() {
		graphs[g.Index] = g
	}
	for _, smp := range c.Samples {
		g := graphs[smp.Graph]
		text := g.Kind + " " + g.Shape
		kernels := simKernels
		if g.Kind == "mixed" {
			// The prefill chunk is the mixed frame's extra GPU time over a decode frame.
			kernels = append(append([]simKernel(nil), simKernels...), simKernel{simPrefillKernel, traceMixedStretch - 1})
		}
		var total float64
		shares := make([]float64, len(kernels))
		for i, k := range kernels {
			shares[i] = k.share * (1 + 0.1*(2*tr.rng.Float64()-1))
			total += shares[i]
		}
		graphID := int64(smp.Graph + 1)
		launch := smp.CommittedAtNS + tr.model(traceCommitToLaunch) - origin
		for _, rk := range smp.Ranks {
			pid, tid := int64(simRankPid+10*rk.Rank), int64(simRankTid+10*rk.Rank)
			f.Ranges = append(f.Ranges, nsysdb.Range{Start: smp.SelectedAtNS - origin, End: smp.CompletionObservedAtNS - origin, Pid: pid, Tid: tid, Text: text})
			at, span := rk.StartNS-origin, float64(rk.EndNS-rk.StartNS)
			for i, k := range kernels {
				d := int64(span * shares[i] / total)
				if i == len(kernels)-1 {
					d = rk.EndNS - origin - at
				}
				f.Kernels = append(f.Kernels, nsysdb.Kernel{Start: at, End: at + d, Device: rk.Rank, Stream: 7, Name: k.name,
					Pid: pid, Tid: tid, LaunchAt: launch, GraphID: &graphID})
				at += d
			}
		}
	}
	return f
}
