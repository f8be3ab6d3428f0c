package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// The first screen of the report: what was compared, the verdict and the few
// figures that decided it, before any section heading. A reader who stops there
// knows which stacks ran, on what, and why the rule said what it said; every
// section after it is the detail behind those lines.

// firstScreen adds the untitled opening section.
func (r *Report) firstScreen(d *document) {
	s, v := &r.Summary, r.Summary.Promotion
	top := d.add("status", "")
	top.p("**Decision: %s.** Campaign status: %s. %s", v.Verdict, s.CampaignStatus, r.restoreLine())
	if r.ev.plan.Campaign.Description != "" {
		top.p("%s", r.ev.plan.Campaign.Description)
	}
	if t := r.comparedTable(); t != nil {
		top.p("What was compared:")
		top.tab(t)
	}
	if v.Rule == nil || len(v.Comparisons) == 0 {
		top.p("No decision rule was pre-registered: nothing is promoted, and no figure decides anything.")
		return
	}
	ru := v.Rule
	top.p("What decided it: %s of %s against %s, per repetition (details in the sections below):",
		ru.PrimaryMetric, ru.CandidateArm, baselineText(ru.BaselineArm, v.DriftArm))
	unit := ""
	if u := metricUnit(ru.PrimaryMetric); u != "" {
		unit = ", " + u
	}
	t := &table{head: []string{"Cell", "Role", "Incumbent before / after" + unit, "Candidate" + unit, "Effect, 95% interval", "Needs", "Outcome"}}
	for _, c := range v.Comparisons {
		inc, cand, eff := "—", "—", "—"
		if f := c.Baseline; f != nil && f.Mean != nil {
			inc = metricNum(c.Metric, *f.Mean)
			if a := c.After; a != nil && a.Mean != nil {
				inc += " / " + metricNum(c.Metric, *a.Mean)
			}
		}
		if f := c.Candidate; f != nil && f.Mean != nil {
			cand = metricNum(c.Metric, *f.Mean)
		}
		if c.Gain != nil {
			eff = pm(*c.Gain)
			if c.Interval != nil {
				eff += fmt.Sprintf(" [%s, %s]", pm(c.Interval.Lo), pm(c.Interval.Hi))
			}
		}
		out := "ineligible: " + c.Ineligible
		if c.Eligible {
			out = "holds"
			if !c.Holds {
				out = "does not hold"
			}
			out += fmt.Sprintf(" (%s %s)", c.Decided, pm(*c.DecidingValue))
		}
		t.rows = append(t.rows, []string{c.Cell, c.Role, inc, cand, eff, c.Criterion, out})
	}
	top.tab(t)
}

// metricUnit is the unit of a rule metric's values.
func metricUnit(metric string) string {
	switch {
	case strings.Contains(metric, "tok_s"):
		return "tok/s"
	case strings.Contains(metric, "_ms"):
		return "ms"
	case metric == "joules_per_output_token":
		return "J/token"
	}
	return ""
}

// metricNum prints a rule metric's value in its unit: throughputs as whole tokens
// per second, times in milliseconds at the precision that suits their size.
func metricNum(metric string, x float64) string {
	switch {
	case strings.Contains(metric, "tok_s"):
		return tokS(x)
	case strings.Contains(metric, "_ms"):
		return fmtMS(x)
	case metric == "joules_per_output_token":
		return fmtF(x, 4)
	}
	return fmtF(x, 3)
}

// tokS prints a throughput as a whole number with thousands separators: the
// decimals of a block's tok/s are noise far below its block-to-block spread.
func tokS(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "—"
	}
	n := int(math.Round(x))
	if n < 0 {
		return "−" + fmtIntSep(-n)
	}
	return fmtIntSep(n)
}

// fmtIntSep is fmtInt with a separator from 1,000 on (fmtInt starts at 10,000,
// which suits counts; a column of throughputs reads better aligned).
func fmtIntSep(n int) string {
	if n < 1000 || n >= 10000 {
		return fmtInt(n)
	}
	s := fmt.Sprint(n)
	return s[:1] + "," + s[1:]
}

// targetFacts is what the first screen says of one target.
type targetFacts struct {
	name, engine, serving string
	arms, models          []string
}

// comparedTable lists each target with the arms that ran on it, its serving engine,
// the model its requests named and what served it (a simulator profile and its
// time scale, or an image).
func (r *Report) comparedTable() *table {
	_, observed, _ := r.targetImages()
	var order []string
	facts := map[string]*targetFacts{}
	for _, b := range r.ev.blocks {
		if b.Target == nil || b.Matrix == "" {
			continue
		}
		name := text(b.Target["name"])
		f := facts[name]
		if f == nil {
			f = &targetFacts{name: name, serving: servingText(b.Target, observed[name])}
			facts[name] = f
			order = append(order, name)
		}
		if b.Arm != "" && !slices.Contains(f.arms, b.Arm) {
			f.arms = append(f.arms, b.Arm)
		}
		for _, a := range b.attempts {
			if a.engine != "" && f.engine == "" {
				f.engine = a.engine
			}
			if a.model != "" && !slices.Contains(f.models, a.model) {
				f.models = append(f.models, a.model)
			}
		}
	}
	if len(order) == 0 {
		return nil
	}
	t := &table{head: []string{"Target", "Arms", "Engine", "Model", "Served by"}}
	for _, n := range order {
		f := facts[n]
		tg := r.targetConfig(n)
		eng := f.engine
		if eng == "" {
			eng = orText(text(tg["engine"]), target.DefaultEngine)
		}
		model := strings.Join(f.models, ", ")
		if model == "" {
			model = orText(text(tg["model"]), "not recorded")
		}
		t.rows = append(t.rows, []string{n, strings.Join(f.arms, ", "), eng, model, f.serving})
	}
	return t
}

func (r *Report) targetConfig(name string) map[string]any {
	for _, b := range r.ev.blocks {
		if b.Target != nil && text(b.Target["name"]) == name {
			return b.Target
		}
	}
	return nil
}

// servingText says what served a target: the simulator's profile and time scale
// (a simulated target's timings are the profile's times the scale), or the image.
// An image the plan knew only after a step (a build's output) is the one its
// deploy and restore steps observed.
func servingText(tg map[string]any, observed []string) string {
	runtime := text(tg["runtime"])
	if h, ok := tg["host"].(map[string]any); ok && runtime == "" {
		runtime = text(h["runtime"])
	}
	prof, img := text(tg["profile"]), text(tg["image"])
	if (runtime == "sim" || runtime == "") && img == "" {
		scale := 1.0
		if x, ok := tg["time_scale"].(float64); ok && x > 0 {
			scale = x
		}
		s := fmt.Sprintf("rigor's simulator, profile %s, time scale %g", orText(prof, "(default)"), scale)
		if scale != 1 {
			s += fmt.Sprintf(" (the profile's timings × %g: %s)", scale, speed(scale))
		}
		return s
	}
	switch {
	case plans.IsUnknownText(img) && len(observed) > 0:
		img = strings.Join(observed, ", ")
	case plans.IsUnknownText(img):
		img = "not observed " + img
	case img == "":
		img = "(no image declared)"
	}
	return fmt.Sprintf("image %s on the %s runtime", img, orText(runtime, "docker"))
}

func speed(scale float64) string {
	if scale < 1 {
		return fmt.Sprintf("%s× faster than real time", fmtF(1/scale, -1))
	}
	return fmt.Sprintf("%s× slower than real time", fmtF(scale, -1))
}

// baselineText names what a candidate block is compared with: the mean of the
// incumbent arms before and after it, or, when no incumbent arm runs after the
// candidate, the one before it alone.
func baselineText(before, after string) string {
	if after == "" {
		return fmt.Sprintf("%s alone (no incumbent arm runs after the candidate)", before)
	}
	return fmt.Sprintf("the mean of %s and %s", before, after)
}
