package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

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
			p, err := a.load(g, args[0])
			if err != nil {
				return err
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
			// candidate traffic, while the rule can still be amended prospectively.
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
		cfg := inst.Config
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
	return nil
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

// outageFit sums the hard bounds of the steps inside the outage and compares them
// with what the budget leaves after the reserve.
func outageFit(p *plans.Plan) string {
	o := p.Campaign.Outage
	if o == nil {
		return "outage: none declared"
	}
	begin := -1
	var inside time.Duration
	var unbounded, lastFit []string
	for i, inst := range p.Instances {
		if begin < 0 && inst.Meta.Outage == "begin" {
			begin = i
		}
		if begin < 0 || inst.Meta.Always {
			continue
		}
		if inst.Meta.Timeout == 0 {
			unbounded = append(unbounded, inst.Addr)
		}
		inside += inst.Meta.Timeout
		if inside <= o.Budget-o.Reserve {
			lastFit = append(lastFit, inst.Addr)
		}
		if inst.Meta.Outage == "end" {
			break
		}
	}
	avail := o.Budget - o.Reserve
	s := fmt.Sprintf("outage: budget %s, reserve %s for restore, %s usable", o.Budget, o.Reserve, avail)
	if begin < 0 {
		return s + "; no step opens it (outage = \"begin\")"
	}
	s += fmt.Sprintf("\n  opened by %s; hard bounds of the steps inside sum to %s", p.Instances[begin].Addr, inside)
	if len(unbounded) > 0 {
		s += fmt.Sprintf(" (%d step(s) use their type's default bound)", len(unbounded))
	}
	if inside <= avail {
		return s + "\n  fits: every step inside can run to its bound and still leave the reserve"
	}
	last := "none"
	if len(lastFit) > 0 {
		last = lastFit[len(lastFit)-1]
	}
	return s + fmt.Sprintf("\n  does not fit at worst case: steps after %s start only if the outage clock leaves room; the rest would be deferred", last)
}
