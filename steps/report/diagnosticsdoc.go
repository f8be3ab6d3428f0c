package report

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/steps/nsys"
	"github.com/rigor-bench/rigor/steps/trace"
)

// diagnosticsSection renders summary.json's diagnostics: the scheduler traces and the
// Nsight captures with seed 000's analysis, and what neither can say.
func (r *Report) diagnosticsSection(d *document) {
	dg := r.Summary.Diagnostics
	if dg == nil {
		return
	}
	s := d.add("diagnostics", "Diagnostics: scheduler traces and Nsight captures")
	s.p("Captures are diagnostic evidence kept apart from the clean throughput blocks. Every figure below comes from the kept files (raw.json, the SQLite export), hashed against the journal.")
	r.traceDiagnostics(s, dg)
	r.nsightDiagnostics(s, dg)
}

func (r *Report) traceDiagnostics(s *section, dg *Diagnostics) {
	if len(dg.TraceCaptures) == 0 {
		s.p("Scheduler traces: no trace step has run.")
		return
	}
	s.p("Scheduler trace captures, every attempt. The window is placed on UTC through the capture's before anchor; the alignment bound is |Δutc − Δmono| between its before and after anchors (it does not include the gap between the two clock reads inside one anchor).")
	t := &table{head: []string{"Capture", "Status", "Target", "Incarnation", "Window (UTC)", "Requested / window s", "Samples (dropped)", "UTC alignment bound", "Under load", "Pooled"}}
	for _, c := range dg.TraceCaptures {
		status := c.Status
		if c.Class != "" {
			status += " (" + c.Class + ")"
		}
		win, req, bound := "—", "—", "—"
		if c.Window != nil {
			win = utcSpan(c.Window.StartUTC, c.Window.EndUTC)
			req = fmtF(c.Window.RequestedS, 3) + " / " + fmtF(c.Window.WindowS, 3)
			bound = "±" + fmtNS(c.Window.AlignmentBoundNS)
		}
		pooled := "yes"
		if !c.Pooled {
			pooled = "no: " + orDash(c.NotPooled)
		}
		t.rows = append(t.rows, []string{fmt.Sprintf("%s attempt %d", c.Step, c.Attempt), status, c.Target, orDash(c.Incarnation), win, req,
			fmt.Sprintf("%d (%d)", c.Samples, c.Dropped), bound, c.Overlap.Note, pooled})
	}
	s.tab(t)
	for _, p := range dg.TraceAnalyses {
		a := p.Analysis
		s.p("Target %s, incarnation %s: %d capture(s) pooled (%s), %d samples (%d unqueued, %d queued). Excluded: %d capture(s) of another incarnation with %d samples%s. Only records of one container incarnation are compared: %s.",
			p.Target, p.Incarnation, len(p.Captures), strings.Join(p.Captures, ", "), a.Samples, a.Unqueued, a.Queued,
			p.ExcludedCaptures, p.ExcludedSamples, listSuffix(p.ExcludedIncarnations), p.Basis)
		if a.Samples == 0 {
			continue
		}
		var ranks []string
		for _, rk := range a.Ranks {
			ranks = append(ranks, fmt.Sprintf("rank %d p50 %s ms (max %s)", rk.Rank, fmtMS(rk.IntervalMS.P50), fmtMS(rk.IntervalMS.Max)))
		}
		wall := "every sample carries host_wall_ns"
		if a.HostWallField < a.Samples {
			wall = fmt.Sprintf("%d of %d samples carry host_wall_ns; the others use completion observation − selection", a.HostWallField, a.Samples)
		}
		s.p("Rank GPU intervals over all %d samples: %s; per-sample maximum over ranks p50 %s ms, p95 %s ms; rank spread (max − min interval) p50 %s µs. Ranks are compared and their maximum taken; rank times are never summed. Host wall p50 %s ms (%s).",
			a.Samples, strings.Join(ranks, "; "), fmtMS(a.MaxRankMS.P50), fmtMS(a.MaxRankMS.P95), fmtUS(a.RankSpreadUS.P50), fmtMS(a.HostWallMS.P50), wall)
		g := &table{head: []string{"Graph (index kind shape)", "Capacity batch / token / prefill", "Scheduled lanes", "Queued", "n"}}
		for _, rk := range a.Ranks {
			g.head = append(g.head, fmt.Sprintf("Rank %d p50 ms", rk.Rank))
		}
		g.head = append(g.head, "Max-rank p50 / p95 ms", "Rank spread p50 µs", "Host wall p50 ms", "Host wall − max-rank p50 µs", "Selection → commit p50 µs", "Commit → completion observation p50 ms")
		ret := &table{head: []string{"Graph", "Scheduled lanes", "Queued", "n", "Retained p50 ms", "Compared with", "Reference p50 ms", "Retained vs reference p50 (min … max)", "Prior-observation age p50 / max", "Without prior observation", "Freshness", "Refresh origin"}}
		for _, gr := range a.Groups {
			name := fmt.Sprintf("%d %s %s", gr.Graph, gr.Kind, gr.Shape)
			row := []string{name, fmt.Sprintf("%d / %d / %d", gr.BatchCapacity, gr.TokenCapacity, gr.PrefillCapacity), fmt.Sprint(gr.Lanes), yesNo(gr.Queued), fmt.Sprint(gr.Samples)}
			for _, rk := range a.Ranks {
				row = append(row, rankP50(gr, rk.Rank))
			}
			row = append(row, fmtMS(gr.MaxRankMS.P50)+" / "+fmtMS(gr.MaxRankMS.P95), fmtUS(gr.RankSpreadUS.P50), fmtMS(gr.HostWallMS.P50),
				fmtUS(gr.WallMinusGPUUS.P50), fmtUS(gr.SelectToCommitUS.P50), fmtMS(gr.CommitToObsMS.P50))
			g.rows = append(g.rows, row)
			age := "—"
			if gr.AgeMS.N > 0 {
				age = fmtNS(int64(math.Round(gr.AgeMS.P50*1e6))) + " / " + fmtNS(int64(math.Round(gr.AgeMS.Max*1e6)))
			}
			vs := "—"
			if gr.RetainedVsRefPct.N > 0 {
				vs = fmt.Sprintf("%s (%s … %s)", signedPct(gr.RetainedVsRefPct.P50), signedPct(gr.RetainedVsRefPct.Min), signedPct(gr.RetainedVsRefPct.Max))
			}
			ret.rows = append(ret.rows, []string{name, fmt.Sprint(gr.Lanes), yesNo(gr.Queued), fmt.Sprint(gr.Samples), fmtMS(gr.RetainedMS.P50), gr.Reference,
				fmtMS(gr.ReferenceMS.P50), vs, age, fmt.Sprint(gr.WithoutPrior), counts(gr.Freshness), counts(gr.Origins)})
		}
		s.p("Samples grouped by runtime graph, scheduled physical lane count and the queued flag; queued and unqueued samples are never mixed.")
		s.tab(g)
		s.p("Retained shape-cost observation at selection (retained_ns) against the sample's own measured cost by the cost estimator's rule: the max-rank GPU interval when the sample was queued, otherwise max(max-rank GPU interval, host wall). The prior-observation age is selected_at_ns − selection.observed_at_ns.")
		s.tab(ret)
		var notes []string
		if a.SourceEquivalent > 0 {
			notes = append(notes, fmt.Sprintf("%d sample(s) carry source_equivalent_cost_ns; %d equal the rule's reference.", a.SourceEquivalent, a.SourceEquivalentAgree))
		}
		if a.AgeFieldDisagree > 0 {
			notes = append(notes, fmt.Sprintf("%d sample(s) carry a prior_observation_age_ns that differs from selected_at_ns − selection.observed_at_ns; the latter is used.", a.AgeFieldDisagree))
		}
		notes = append(notes, a.GraphConflicts...)
		for _, o := range p.Overlapping {
			notes = append(notes, "Captures "+o+" overlap in time: their samples may count the same frames twice.")
		}
		s.list(notes)
	}
	s.p("What a scheduler trace cannot say:")
	s.list(dg.TraceGaps)
}

func (r *Report) nsightDiagnostics(s *section, dg *Diagnostics) {
	if len(dg.NsightCaptures) == 0 {
		s.p("Nsight Systems: no nsys step has run.")
		return
	}
	for _, c := range dg.NsightCaptures {
		status := c.Status
		if c.Class != "" {
			status += " (" + c.Class + ")"
		}
		head := fmt.Sprintf("Nsight capture %s attempt %d: %s", c.Step, c.Attempt, status)
		if c.Simulated {
			head = fmt.Sprintf("Nsight capture %s attempt %d (SIMULATED by %s, no nsys ran): %s", c.Step, c.Attempt, orDash(c.SimulatedBy), status)
		}
		if c.Message != "" && c.Status != "succeeded" {
			head += ": " + c.Message
		}
		parts := []string{head + "."}
		switch {
		case c.StepWindow != nil && c.Simulated:
			parts = append(parts, "The simulator turned the frames it ran over "+utcSpan(c.StepWindow.Start, c.StepWindow.End)+" into kernels of its timing model: the export below has nsys's tables but is not a CUDA trace.")
		case c.StepWindow != nil:
			parts = append(parts, "The step ran `nsys profile` over "+utcSpan(c.StepWindow.Start, c.StepWindow.End)+".")
		}
		parts = append(parts, "Under load: "+c.Overlap.Note+".")
		if c.Control != "" {
			parts = append(parts, "Named unprofiled control: "+c.Control+".")
		}
		s.p("%s", strings.Join(parts, " "))
		if c.SQLite == nil {
			s.p("No SQLite export was kept; nothing is analysed.")
			continue
		}
		if c.AnalysisError != "" {
			s.p("%s (sha256 %s) could not be analysed: %s.", c.SQLite.Path, c.SQLite.SHA256, c.AnalysisError)
			continue
		}
		a := c.Analysis
		iv := "the export records no capture interval"
		if a.Interval.DurationS > 0 {
			iv = fmt.Sprintf("capture interval %s s", fmtF(a.Interval.DurationS, 3))
			if a.Interval.StartUTC != "" {
				iv += " (" + utcSpan(a.Interval.StartUTC, a.Interval.EndUTC) + ")"
			}
		}
		s.p("%s (sha256 %s, Nsight Systems %s): %s; %d kernels over %s s; summed kernel time %s ms (overlapping, not a critical path). Unmapped fraction: %s of summed kernel time matches no module pattern.",
			c.SQLite.Path, c.SQLite.SHA256, orDash(a.ExportVersion), iv, a.Kernels, fmtF(a.KernelSpanS, 3), fmtF(a.SummedKernelMS, 3), pct(a.UnmappedFraction))
		mt := &table{head: []string{"Module", "Kernels", "Summed kernel ms (overlapping)", "Share of summed kernel time"}}
		for _, m := range append(slices.Clone(a.Modules), a.Unmapped) {
			mt.rows = append(mt.rows, shareRow(m))
		}
		s.tab(mt)
		rankHead := "Device (no rank mapping declared)"
		if a.RankMapped {
			rankHead = "Rank and device"
		}
		dt := &table{head: []string{rankHead, "Kernels", "Summed kernel ms (overlapping)", "Share"}}
		for _, x := range a.Devices {
			dt.rows = append(dt.rows, shareRow(x))
		}
		s.tab(dt)
		gt := &table{head: []string{"Graph (NVTX range on the launching thread, or CUDA graph)", "Kernels", "Summed kernel ms (overlapping)", "Share"}}
		for _, x := range a.Graphs {
			gt.rows = append(gt.rows, shareRow(x))
		}
		s.tab(gt)
		s.p("Graph mapping: %s of summed kernel time was launched in no NVTX range and from no CUDA graph.", pct(a.GraphUnmappedFraction))
		var notes []string
		if a.AmbiguousKernels > 0 {
			notes = append(notes, fmt.Sprintf("%d kernel(s) match patterns of more than one module; each counts in the first by name.", a.AmbiguousKernels))
		}
		notes = append(notes, a.Notes...)
		s.list(notes)
		warn := append(slices.Clone(c.ToolWarnings), a.Warnings...)
		if len(warn) == 0 {
			s.p("Warnings: none from nsys and none in the export's diagnostics.")
		} else {
			s.p("Warnings (nsys output, then the export's DIAGNOSTIC_EVENT above the informational level):")
			s.list(warn)
		}
		r.overheadDoc(s, c)
	}
	s.p("Caveats on Nsight figures:")
	s.list(dg.NsightCaveats)
}

func (r *Report) overheadDoc(s *section, c NsightCapture) {
	o := c.Overhead
	if o == nil {
		s.p("Observer overhead: not compared: %s.", c.OverheadNote)
		return
	}
	s.p("Observer overhead: profiled block %s against its unprofiled control %s (same arm: %s, same concurrency: %s, same corpus: %s, adjacent: %s). The noise is the range (max − min over mean) of the unprofiled blocks of the same arm, concurrency, corpus and incarnation: %s%s.",
		o.Profiled, o.Control, yesNo(o.SameArm), yesNo(o.SameConcurrency), yesNo(o.SameCorpus), yesNo(o.Adjacent), orNone(o.NoiseBlocks), prefixed("; ", c.OverheadNote))
	t := &table{head: []string{"Metric", "Profiled", "Control", "Difference (profiled / control − 1)", "Unprofiled block-to-block range", "Within that range"}}
	for _, m := range o.Metrics {
		rg, within := "not estimable", "—"
		if m.NoiseRange != nil {
			rg, within = pct(*m.NoiseRange), yesNo(*m.WithinNoise)
		}
		t.rows = append(t.rows, []string{m.Metric, fmtF(m.Profiled, 3), fmtF(m.Control, 3), pm(m.Difference), rg, within})
	}
	s.tab(t)
	s.p("%s", o.Caveat)
}

func shareRow(x nsys.Share) []string {
	return []string{x.Name, fmt.Sprint(x.Kernels), fmtF(x.SummedKernelMS, 3), pct(x.Fraction)}
}

func rankP50(g trace.Group, rank int) string {
	for _, r := range g.Ranks {
		if r.Rank == rank {
			return fmtMS(r.IntervalMS.P50)
		}
	}
	return "absent"
}

func counts(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return orDash(strings.Join(out, ", "))
}

func listSuffix(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return " (" + strings.Join(xs, ", ") + ")"
}

func utcSpan(start, end string) string { return start + " – " + end }

// fmtNS prints a nanosecond bound with a unit that suits its size.
func fmtNS(ns int64) string {
	sign := ""
	if ns < 0 {
		sign, ns = "−", -ns
	}
	switch {
	case ns >= 1_000_000:
		return sign + fmtMS(float64(ns)/1e6) + " ms"
	case ns >= 1000:
		return sign + fmtF(float64(ns)/1e3, 3) + " µs"
	}
	return fmt.Sprintf("%s%d ns", sign, ns)
}

func fmtUS(x float64) string { return fmtF(x, 3) }

func signedPct(x float64) string { return pm(x / 100) }

func prefixed(pre, s string) string {
	if s == "" {
		return ""
	}
	return pre + s
}
