package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rigor-bench/rigor/steps"
)

// benchRenderer prints a bench's results to stdout: one level's figures, or a
// sweep's table. Progress and logs go to stderr.
type benchRenderer interface {
	level(w io.Writer, r *benchResult, dir string) error
	sweep(w io.Writer, s *sweepResult) error
}

func benchView(asJSON bool) benchRenderer {
	if asJSON {
		return benchJSON{}
	}
	return benchTable{}
}

// benchJSON prints result.json (sweep.json for a sweep) as written.
type benchJSON struct{}

func (benchJSON) level(w io.Writer, r *benchResult, _ string) error { return encodeJSON(w, r) }
func (benchJSON) sweep(w io.Writer, s *sweepResult) error           { return encodeJSON(w, s) }

func encodeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// benchTable prints the figures for a person.
type benchTable struct{}

func (benchTable) level(w io.Writer, r *benchResult, dir string) error {
	b, f := r.Bench, r.Bench.Figures
	fmt.Fprintf(w, "%s  model %s  %s  %d requests\n", b.Endpoint, b.Model, loopText(b.Level), r.Requests)
	fmt.Fprintf(w, "workload: %s, sha256 %s\n", sourceText(b.Workload.Source), b.Workload.SHA256[:16])
	if wu := b.Warmup; wu != nil {
		fmt.Fprintf(w, "warm-up: %d requests (%d ok) in %.1f s, left out of the figures (%s)\n", wu.Requests, wu.Outcomes[steps.LoadOutcome("ok")], wu.WallS, wu.File)
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "latency over the %d successful requests of %d attempted (ms)\n", f.Succeeded, f.Attempted)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"", "n", "mean", "std", "min"}
	for _, p := range f.TTFTMS.Percentiles {
		head = append(head, "p"+strconv.FormatFloat(p.P, 'g', -1, 64))
	}
	head = append(head, "max")
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	// marked lists the percentiles marked descriptive in some row, for the footnote.
	var marked []float64
	for _, row := range []struct {
		name string
		s    steps.LoadStats
	}{{"TTFO", f.TTFOMS}, {"TTFT (visible)", f.TTFTMS}, {"TPOT", f.TPOTMS}, {"ITL", f.ITLMS}, {"E2E", f.E2EMS}} {
		cells := []string{row.name, strconv.Itoa(row.s.Samples), num(row.s.Mean), num(row.s.Std), num(row.s.Min)}
		for _, p := range row.s.Percentiles {
			c := num(p.Value)
			if p.Descriptive && row.s.Samples > 0 {
				c += "*"
				if !slices.Contains(marked, p.P) {
					marked = append(marked, p.P)
				}
			}
			cells = append(cells, c)
		}
		cells = append(cells, num(row.s.Max))
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	tw.Flush()
	if len(marked) > 0 {
		slices.Sort(marked)
		var need []string
		for _, p := range marked {
			need = append(need, fmt.Sprintf("%d for p%s", steps.CertifiedFrom(p/100), strconv.FormatFloat(p, 'g', -1, 64)))
		}
		fmt.Fprintf(w, "* over fewer samples than certify the percentile (one-sided 99%%: %s): descriptive only\n", strings.Join(need, ", "))
	}
	if f.ITLUnresolved > 0 {
		fmt.Fprintf(w, "ITL over %d of %d successful requests: %d streamed chunks of several tokens without per-chunk usage (--continuous-usage-stats counts each chunk's tokens)\n",
			f.ITLRequests, f.Succeeded, f.ITLUnresolved)
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "request throughput\t%.2f req/s\t(successful requests / %.3f s wall time)\n", f.RequestThroughput, f.WallS)
	fmt.Fprintf(tw, "output token throughput\t%.0f tok/s\t(%d completion tokens of completed requests)\n", f.OutputTokenThroughput, f.OutputTokens)
	fmt.Fprintf(tw, "total token throughput\t%.0f tok/s\t(plus %d prompt tokens)\n", f.TotalTokenThroughput, f.InputTokens)
	if g := f.Goodput; g != nil {
		fmt.Fprintf(tw, "goodput (%s)\t%.2f req/s\t(%d of %d attempted met every SLO: %.1f%%)\n", sloText(g.SLOs), g.ReqPerS, g.Good, g.Attempted, 100*g.Fraction)
	}
	if b.Level.Rate != nil {
		fmt.Fprintf(tw, "achieved request rate\t%s\t%s\n", rateText(f.AchievedRequestRate), offeredText(b.Level, f))
	}
	tw.Flush()
	if short := rateShortfall(b.Level, f); short != "" {
		fmt.Fprintln(w, short)
	}
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "outcome\tcount\t")
	for _, o := range steps.LoadOutcomes() {
		fmt.Fprintf(tw, "%s\t%d\t\n", o, r.Outcomes[o])
	}
	tw.Flush()
	fmt.Fprintf(w, "\nvisible successes / attempted: %d/%d (%.1f%%)\n", r.VisibleSuccesses, r.Requests, 100*r.VisibleSuccessRate)
	for i, e := range b.Errors {
		if i == 0 {
			fmt.Fprintln(w, "failures, first distinct errors:")
		}
		if i == maxErrorsShown {
			fmt.Fprintf(w, "  ... and %d more in result.json\n", len(b.Errors)-i)
			break
		}
		fmt.Fprintf(w, "  %s x%d: %s (first %s)\n", e.Outcome, e.Count, e.Message, e.FirstRequest)
	}
	switch b.Stopped {
	case "interrupted":
		fmt.Fprintf(w, "INTERRUPTED: stopped by a signal; %d requests cancelled; every record taken is kept\n", r.Outcomes["cancelled"])
	case "hard_bound":
		fmt.Fprintf(w, "INCOMPLETE: the block hit its hard bound (--timeout %s); %d requests cancelled; every record taken is kept\n", b.Settings["timeout"], r.Outcomes["cancelled"])
	case "duration":
		fmt.Fprintf(w, "stopped sending after --duration %s: %d of at most %s requests\n", b.Settings["duration"], r.Requests, b.Settings["requests"])
	}
	fmt.Fprintln(w, calibrationText(b.Calibration, b.CalibNote))
	fmt.Fprintf(w, "rigor %s; evidence: %s, %s\n", b.Rigor, filepath.Join(dir, "requests.jsonl"), filepath.Join(dir, "result.json"))
	return nil
}

func (benchTable) sweep(w io.Writer, s *sweepResult) error {
	fmt.Fprintf(w, "%s sweep: %d levels\n\n", s.Dimension, len(s.Levels))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	ps := ""
	if len(s.Levels) > 0 {
		ps = "p" + strconv.FormatFloat(s.Percentile, 'g', -1, 64)
	}
	open := len(s.Levels) > 0 && s.Levels[0].Rate != nil
	achieved := ""
	if open {
		achieved = "achieved req/s\t"
	}
	fmt.Fprintf(tw, "level\tok/attempted\treq/s\tout tok/s\tTTFT %[1]s\tTPOT %[1]s\tITL %[1]s\tE2E %[1]s\tgoodput req/s\t%[2]sPareto\t\n", ps, achieved)
	for _, l := range s.Levels {
		f := l.Figures
		good := "-"
		if f.Goodput != nil {
			good = fmt.Sprintf("%.2f", f.Goodput.ReqPerS)
		}
		front := ""
		if l.Pareto.TTFT && l.Pareto.TPOT {
			front = "ttft+tpot"
		} else if l.Pareto.TTFT {
			front = "ttft"
		} else if l.Pareto.TPOT {
			front = "tpot"
		}
		if open {
			good += "\t" + rateText(f.AchievedRequestRate)
		}
		fmt.Fprintf(tw, "%s\t%d/%d\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t\n", l.Name, f.Succeeded, f.Attempted, f.RequestThroughput,
			f.OutputTokenThroughput, num(pick(f.TTFTMS, s.Percentile)), num(pick(f.TPOTMS, s.Percentile)), num(pick(f.ITLMS, s.Percentile)),
			num(pick(f.E2EMS, s.Percentile)), good, front)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nPareto front: the levels no other level beats on both output throughput and %s latency (TTFT, TPOT)\n", ps)
	if s.Chart != nil {
		fmt.Fprintf(w, "chart: %s, %s\n", filepath.Join(s.Dir, s.Chart.PNG), filepath.Join(s.Dir, s.Chart.SVG))
	}
	for _, l := range s.Levels {
		if l.Stopped != "completed" {
			fmt.Fprintf(w, "%s: stopped (%s)\n", l.Name, l.Stopped)
		}
		if l.Figures.Failed > 0 {
			fmt.Fprintf(w, "%s: %d of %d requests failed; first: %s x%d: %s\n", l.Name, l.Figures.Failed, l.Figures.Attempted, l.Errors[0].Outcome, l.Errors[0].Count, l.Errors[0].Message)
		}
	}
	fmt.Fprintf(w, "rigor %s; per level: %s/<level>/result.json, requests.jsonl; %s\n", s.Rigor, s.Dir, filepath.Join(s.Dir, "sweep.json"))
	return nil
}

func loopText(l benchLevelInfo) string {
	if l.Rate != nil {
		return fmt.Sprintf("open loop, %g req/s (%s), ceiling %d", *l.Rate, l.Arrival, l.Concurrency)
	}
	return fmt.Sprintf("closed loop, concurrency %d", l.Concurrency)
}

func sourceText(s steps.LoadSourceInfo) string {
	switch s.Kind {
	case "corpus":
		b, _ := json.Marshal(s.Settings)
		return "corpus " + string(b)
	case "random":
		b, _ := json.Marshal(s.Settings)
		return "random prompts " + string(b)
	}
	t := fmt.Sprintf("%s %s (%d distinct inputs", s.Kind, s.Path, s.Distinct)
	if s.FileSHA256 != "" {
		t += ", file sha256 " + s.FileSHA256[:16]
	}
	return t + ")"
}

func sloText(slos []steps.LoadSLO) string {
	var parts []string
	for _, s := range slos {
		parts = append(parts, fmt.Sprintf("%s <= %s", s.Metric, time.Duration(s.MaxMS*float64(time.Millisecond))))
	}
	return strings.Join(parts, ", ")
}

func rateText(r *float64) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f req/s", *r)
}

// offeredText compares an open loop's achieved rate with the offered one.
func offeredText(l benchLevelInfo, f steps.LoadFigures) string {
	lag := ""
	if f.ScheduleLagMS.Samples > 0 {
		lag = fmt.Sprintf("; schedule lag mean %s ms, max %s ms", num(f.ScheduleLagMS.Mean), num(f.ScheduleLagMS.Max))
	}
	return fmt.Sprintf("(of %g req/s offered%s)", *l.Rate, lag)
}

// rateShortfall warns when an open loop sent well below its offered rate: the
// ceiling held requests back, so the block measured a lower load than asked.
func rateShortfall(l benchLevelInfo, f steps.LoadFigures) string {
	if l.Rate == nil || f.AchievedRequestRate == nil || *f.AchievedRequestRate >= 0.9**l.Rate {
		return ""
	}
	return fmt.Sprintf("WARNING: the client sent %.2f req/s of the %g offered: requests waited for the concurrency ceiling %d (max observed in flight %d), so this is a lower load than asked; raise --concurrency or lower --rate",
		*f.AchievedRequestRate, *l.Rate, l.Concurrency, f.MaxConcurrency)
}

func calibrationText(c *benchCalibration, note string) string {
	if c == nil {
		return "client timing error: " + note
	}
	return fmt.Sprintf("client timing error (rigor calibrate %s ago, concurrency %d): TTFT p99 %s ms, TPOT p99 %s ms",
		time.Duration(c.AgeS*float64(time.Second)).Round(time.Minute), c.Concurrency, num(c.TTFTErrorP99MS), num(c.TPOTErrorP99MS))
}

// pick is the percentile p of s, nil when s does not report it.
func pick(s steps.LoadStats, p float64) *float64 {
	for _, v := range s.Percentiles {
		if v.P == p {
			return v.Value
		}
	}
	return nil
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	v := *p
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
