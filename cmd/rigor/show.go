package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/report"
	"github.com/spf13/cobra"
	"github.com/zclconf/go-cty/cty"
)

func newShowCmd(g *globals) *cobra.Command {
	var a planArgs
	var asJSON bool
	var state string
	cmd := &cobra.Command{
		Use:   "show CAMPAIGN",
		Short: "Print the ordered step instances, what is unknown until which step, and the outage fit",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && state != "" {
				return &exitError{code: 2, msg: "--json prints the canonical plan alone; --state adds the pilot's power to the text form: use one or the other"}
			}
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			if state != "" {
				if err := engine.CheckCampaignState(state, p.Campaign.Name); err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
			}
			if asJSON {
				b, err := p.CanonicalJSON()
				if err != nil {
					return err
				}
				_, err = g.stdout.Write(b)
				return err
			}
			if err := renderShow(g.stdout, p); err != nil {
				return err
			}
			if state == "" {
				return nil
			}
			// After the pilot, what the design can resolve: stated before any
			// measured block, while the rule can still be amended prospectively.
			pw, err := report.PowerFromState(state)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			fmt.Fprintln(g.stdout)
			fmt.Fprintln(g.stdout, pw.String())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the canonical plan JSON instead")
	cmd.Flags().StringVar(&state, "state", "", "state directory: also state the minimum detectable effect from its pilot")
	a.bind(cmd)
	return cmd
}

func renderShow(w io.Writer, p *plans.Plan) error {
	sum, err := p.Hash()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "campaign %q: %d step instances, plan sha256 %s\n\n", p.Campaign.Name, len(p.Instances), sum)
	for n, inst := range p.Instances {
		var tags []string
		if inst.Meta.Phase != "" {
			tags = append(tags, inst.Meta.Phase)
		}
		if inst.Meta.Timeout > 0 {
			tags = append(tags, "timeout "+inst.Meta.Timeout.String())
		}
		if len(inst.Meta.Uses) > 0 {
			tags = append(tags, "uses "+strings.Join(inst.Meta.Uses, ","))
		}
		if inst.Meta.Outage != "" {
			tags = append(tags, "outage "+inst.Meta.Outage)
		}
		if inst.Meta.Always {
			tags = append(tags, "always")
		}
		line := fmt.Sprintf("%3d. %s", n+1, inst.Addr)
		if len(tags) > 0 {
			line += "  [" + strings.Join(tags, "; ") + "]"
		}
		fmt.Fprintln(w, line)
		if len(inst.DependsOn) > 0 {
			fmt.Fprintf(w, "       after: %s\n", summarizeList(inst.DependsOn, 4))
		}
		if len(inst.After) > 0 {
			fmt.Fprintf(w, "       after, whatever their outcome: %s\n", summarizeList(inst.After, 4))
		}
		if inst.Meta.ConditionText != "" {
			fmt.Fprintf(w, "       only if: %s (otherwise skipped)\n", inst.Meta.ConditionText)
		}
		if inst.Meta.During != "" {
			fmt.Fprintf(w, "       during: %s, starting %s\n", inst.Meta.During, inst.Meta.StartCondition())
		}
		cfg := inst.Config()
		if cfg != cty.NilVal && cfg.Type().IsObjectType() && !cfg.IsNull() {
			names := make([]string, 0)
			for name := range cfg.Type().AttributeTypes() {
				names = append(names, name)
			}
			sort.Strings(names)
			for _, name := range names {
				v := cfg.GetAttr(name)
				if v.IsNull() {
					continue
				}
				fmt.Fprintf(w, "       %s = %s\n", name, renderValue(name, v))
			}
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, outageFit(p))
	for _, line := range orderLines(p) {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, overlapText(p))
	return nil
}

// orderLines states each matrix's order: the arm sequence of each repetition, the
// swaps (changes of target between consecutive arm runs), the deploys they add and
// what those cost in outage time at their bounds.
func orderLines(p *plans.Plan) []string {
	var out []string
	for _, m := range p.Matrices {
		mo := m.Ordering
		if mo == nil {
			continue
		}
		head := fmt.Sprintf("order of matrix %s: %s", m.Name, mo.Order)
		switch mo.Order {
		case plans.OrderRandomized:
			how := "declared"
			if mo.SeedDerived {
				how = "derived from the matrix name"
			}
			head += fmt.Sprintf(" (order_seed %d, %s; recorded in the plan)", mo.Seed, how)
		case plans.OrderAlternate:
			head += " (declared order in odd repetitions, neighbours swapped in even ones)"
		case plans.OrderDeclared:
			head += " (each arm's blocks, then the next arm)"
		}
		out = append(out, head)
		for i, seq := range mo.Sequences {
			if mo.Order == plans.OrderDeclared {
				out = append(out, "  "+strings.Join(seq, ", "))
				break
			}
			out = append(out, fmt.Sprintf("  r%d: %s", i+1, strings.Join(seq, ", ")))
		}
		cost := fmt.Sprintf("  %d swap(s) of target", mo.Swaps)
		if len(mo.Deploys) > 0 {
			cost += fmt.Sprintf("; %d deploy(s) run again for them (%s), %s more outage at their bounds", len(mo.Deploys), summarizeList(mo.Deploys, 3), p.OrderCost(mo))
		} else if mo.Order != plans.OrderDeclared {
			cost += "; no deploy runs again, so no outage time beyond the declared order's"
		}
		out = append(out, cost)
	}
	return out
}

// maxOverlapLines bounds the pairs plan show lists; the count says how many exist.
const maxOverlapLines = 12

// overlapText states the scheduling rule (plans.Clash) and what it lets run side by
// side in this plan: the steps that run alone, the steps that share each use, and
// the pairs that may overlap.
func overlapText(p *plans.Plan) string {
	var b strings.Builder
	b.WriteString("overlap: a step without uses runs alone; steps run side by side only when their uses are disjoint (or one is a capture during the other) and no dependency orders them")
	var alone []string
	byUse := map[string][]string{}
	for _, inst := range p.Instances {
		c := inst.Claim()
		if len(c.Uses) == 0 && c.During == "" {
			alone = append(alone, inst.Addr)
		}
		for _, u := range c.Uses {
			byUse[u] = append(byUse[u], inst.Addr)
		}
	}
	if len(alone) > 0 {
		fmt.Fprintf(&b, "\n  runs alone (no uses): %s", summarizeList(alone, 6))
	}
	uses := make([]string, 0, len(byUse))
	for u := range byUse {
		uses = append(uses, u)
	}
	sort.Strings(uses)
	for _, u := range uses {
		fmt.Fprintf(&b, "\n  uses %s, one at a time: %s", u, summarizeList(byUse[u], 4))
	}
	pairs, n := p.Overlaps(maxOverlapLines)
	if n == 0 {
		b.WriteString("\n  no two steps may overlap")
		return b.String()
	}
	fmt.Fprintf(&b, "\n  %d pair(s) may overlap:", n)
	for _, o := range pairs {
		fmt.Fprintf(&b, "\n    %s beside %s: %s", o.A, o.B, o.Why)
	}
	if n > len(pairs) {
		fmt.Fprintf(&b, "\n    and %d more", n-len(pairs))
	}
	return b.String()
}

func summarizeList(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:max], ", ") + fmt.Sprintf(" and %d more", len(items)-max)
}

// renderValue prints a configuration value compactly: a reference to a declared
// block shows as kind.name, unknowns say which step they wait for.
func renderValue(key string, v cty.Value) string {
	u, marks := v.Unmark()
	if _, ok := marks[plans.Sensitive]; ok {
		return plans.SensitiveText
	}
	if !u.IsKnown() {
		return plans.UnknownText(marks)
	}
	if u.IsNull() {
		return "null"
	}
	ty := u.Type()
	kind := strings.TrimSuffix(key, "s")
	if ty.IsObjectType() && ty.HasAttribute("name") && (kind == "target" || kind == "workload" || kind == "gate" || kind == "host") {
		n := u.GetAttr("name")
		if n.IsKnown() && !n.IsNull() && n.Type() == cty.String {
			return kind + "." + n.AsString()
		}
	}
	if ty.IsListType() || ty.IsTupleType() {
		var parts []string
		for _, e := range u.AsValueSlice() {
			parts = append(parts, renderValue(key, e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if ty.IsObjectType() || ty.IsMapType() {
		var parts []string
		m := u.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			parts = append(parts, k+" = "+renderValue(k, m[k]))
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	}
	b, _ := plans.CanonicalJSON(plans.CanonicalValue(v))
	return strings.TrimSpace(string(b))
}

// outageFit applies the engine's start rule to a worst case: every step from the
// opener on, in plan order, takes its full bound (its timeout, or its step type's
// default), one after the other, even steps that may overlap. It names the steps
// the rule may defer. It is an estimate, not a bound either way: steps that run
// beside others take less time together, and a step ordered before the opener that
// starts after it is held to the engine's rule without being counted here.
func outageFit(p *plans.Plan) string {
	f := p.Forecast()
	if p.Campaign.Outage == nil {
		return "outage: none declared"
	}
	s := fmt.Sprintf("outage: budget %s, reserve %s for restore (the always-steps may take %s together), %s usable",
		f.Budget, f.Reserve, f.Always, f.Budget-plans.StartReserve(f.Reserve, f.Always))
	if f.Opener == "" {
		return s + "; no step opens it (outage = \"begin\")"
	}
	var inside time.Duration
	for _, st := range f.Inside {
		inside += st.Bound
	}
	s += fmt.Sprintf("\n  opened by %s; estimate, every step from it on at its bound (defaults included) and one after the other: %d step(s) inside take %s, then restore %s = %s of %s",
		f.Opener, len(f.Inside), inside, f.Always, f.Worst, f.Budget)
	if len(f.Deferred) == 0 {
		return s + "\n  fits by this estimate: every step counted can run to its bound and still leave the reserve (a step ordered before the opener that starts after it is not counted)"
	}
	s += fmt.Sprintf("\n  may not fit by this estimate (steps that run beside others take less): the engine may defer %d step(s) (a later apply runs them in a new outage window):", len(f.Deferred))
	for i, d := range f.Deferred {
		if i == 8 {
			s += fmt.Sprintf("\n    and %d more", len(f.Deferred)-i)
			break
		}
		s += fmt.Sprintf("\n    %s: %s", d.Addr, d.Reason)
	}
	return s
}
