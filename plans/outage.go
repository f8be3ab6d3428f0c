package plans

import (
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// DefaultTimeout is implemented by step types that have a natural hard bound when
// the plan sets none. Every bound the engine enforces is the plan's timeout or this.
type DefaultTimeout interface {
	DefaultTimeout() time.Duration
}

// Bound is the hard bound the engine enforces on an instance: its timeout, or its
// step type's default. Zero means the step type declares none.
func (p *Plan) Bound(inst *Instance) time.Duration {
	if inst.Meta.Timeout > 0 {
		return inst.Meta.Timeout
	}
	if dt, ok := p.types[inst.Type].(DefaultTimeout); ok {
		return dt.DefaultTimeout()
	}
	return 0
}

// AlwaysBound is the time the always-steps (restore) may take together: they run one
// after the other at the end, so their bounds add up. The reserve must cover it.
func (p *Plan) AlwaysBound() time.Duration {
	var sum time.Duration
	for _, inst := range p.Instances {
		if inst.Meta.Always {
			sum += p.Bound(inst)
		}
	}
	return sum
}

// validateOutage checks the outage markers against the budget: one step opens the
// outage, an always-step closes it, and what the always-steps may take fits in the
// reserve, so restore can never be what overruns the budget.
func (p *Plan) validateOutage() hcl.Diagnostics {
	var diags hcl.Diagnostics
	var begins, ends []*Instance
	for _, inst := range p.Instances {
		switch inst.Meta.Outage {
		case "begin":
			begins = append(begins, inst)
		case "end":
			ends = append(ends, inst)
		}
	}
	for _, inst := range begins[min(1, len(begins)):] {
		diags = append(diags, errorAt(inst.DeclRange, "Second outage begin",
			"%s declares outage = \"begin\", but %s already opens the outage. One step takes the incumbent out of service; the steps after it run inside the outage.", inst.Addr, begins[0].Addr))
	}
	for _, inst := range ends {
		if !inst.Meta.Always {
			diags = append(diags, errorAt(inst.DeclRange, "Outage end on a step that may not run",
				"%s declares outage = \"end\" but not always = true: the step that ends the outage must run after a failure, a stop or an interrupt too.", inst.Addr))
		}
	}
	if len(begins) > 0 && len(ends) == 0 {
		diags = append(diags, errorAt(begins[0].DeclRange, "Outage without restore",
			"%s opens the outage, but no always-step declares outage = \"end\": nothing would bring the incumbent back. Add a restore step with always = true and outage = \"end\".", begins[0].Addr))
	}
	diags = append(diags, p.checkOrderFits()...)
	o := p.Campaign.Outage
	if len(begins) > 0 && o == nil {
		diags = append(diags, errorAt(begins[0].DeclRange, "Outage without budget",
			"%s opens an outage, but the campaign block declares no outage { budget, reserve }.", begins[0].Addr))
	}
	if o == nil {
		return diags
	}
	diags = append(diags, p.checkStepsFit(o)...)
	if ab := p.AlwaysBound(); ab > o.Reserve {
		var parts []string
		var first *Instance
		for _, inst := range p.Instances {
			if inst.Meta.Always {
				parts = append(parts, fmt.Sprintf("%s %s", inst.Addr, p.Bound(inst)))
				if first == nil {
					first = inst
				}
			}
		}
		// A diagnostic is read on a terminal: name the first few, count the rest.
		const listed = 6
		if len(parts) > listed {
			parts = append(parts[:listed], fmt.Sprintf("and %d more", len(parts)-listed))
		}
		diags = append(diags, errorAt(first.DeclRange, "Restore bound exceeds the reserve",
			"The always-steps may take %s together (%s) but the outage reserve is %s: a restore that used its bound would overrun the budget. Lower their timeout or raise the reserve.", ab, strings.Join(parts, ", "), o.Reserve))
	}
	return diags
}

// checkStepsFit refuses a step certain to run inside the outage (the step that
// opens it, and what waits on that step) whose bound alone does not fit before
// the reserve: the engine would defer it at every apply, each saying "apply
// again".
func (p *Plan) checkStepsFit(o *Outage) hcl.Diagnostics {
	var diags hcl.Diagnostics
	left := o.Budget - StartReserve(o.Reserve, p.AlwaysBound())
	inside := map[string]bool{}
	for _, inst := range p.Instances { // run order: a dependency comes first
		if inst.Meta.Always {
			continue
		}
		if inst.Meta.Outage != "begin" && firstIn(inst.DependsOn, inside) == "" {
			continue
		}
		inside[inst.Addr] = true
		if b := p.Bound(inst); b > left {
			diags = append(diags, errorAt(inst.DeclRange, "Step does not fit in the outage",
				"%s runs inside the outage and may take %s (its hard bound), but the budget %s less the reserve %s leaves %s: the engine would defer it at every apply. Lower its timeout or raise the budget.",
				inst.Addr, b, o.Budget, StartReserve(o.Reserve, p.AlwaysBound()), left))
		}
	}
	return diags
}

// Forecast is the worst case of the outage: every step inside it taking its full
// bound, one after the other, with the engine's start rule applied.
type Forecast struct {
	Budget, Reserve time.Duration
	// Opener is the step that opens the outage ("" when none does).
	Opener string
	// Inside are the steps inside the outage that would start, with their bounds.
	Inside []ForecastStep
	// Deferred are the steps the start rule would defer: each would start with too
	// little left before the reserve. What depends on them is deferred with them.
	Deferred []ForecastStep
	// Worst is the outage's length if every started step used its full bound and
	// the always-steps used theirs.
	Worst time.Duration
	// Always is what the always-steps may take together.
	Always time.Duration
}

// ForecastStep is one step of a forecast.
type ForecastStep struct {
	Addr  string
	Bound time.Duration
	// Start is when the step would start, counted from the outage's beginning.
	Start time.Duration
	// Reason says why a deferred step is deferred.
	Reason string
}

// Forecast applies the engine's start rule to the worst case: a step inside the
// outage starts only if elapsed + its bound + the reserve fit in the budget.
func (p *Plan) Forecast() Forecast {
	f := Forecast{Always: p.AlwaysBound()}
	o := p.Campaign.Outage
	if o == nil {
		return f
	}
	f.Budget, f.Reserve = o.Budget, o.Reserve
	deferred := map[string]bool{}
	var elapsed time.Duration
	open := false
	for _, inst := range p.Instances {
		if inst.Meta.Always {
			continue
		}
		if !open && inst.Meta.Outage == "begin" {
			open, f.Opener = true, inst.Addr
		}
		if !open {
			continue
		}
		b := p.Bound(inst)
		if dep := firstIn(inst.DependsOn, deferred); dep != "" {
			deferred[inst.Addr] = true
			f.Deferred = append(f.Deferred, ForecastStep{Addr: inst.Addr, Bound: b, Start: elapsed, Reason: "depends on deferred " + dep})
			continue
		}
		if elapsed+b+StartReserve(o.Reserve, f.Always) > o.Budget {
			deferred[inst.Addr] = true
			f.Deferred = append(f.Deferred, ForecastStep{Addr: inst.Addr, Bound: b, Start: elapsed,
				Reason: fmt.Sprintf("needs %s with %s left before the reserve", b, o.Budget-StartReserve(o.Reserve, f.Always)-elapsed)})
			continue
		}
		f.Inside = append(f.Inside, ForecastStep{Addr: inst.Addr, Bound: b, Start: elapsed})
		elapsed += b
	}
	if open {
		f.Worst = elapsed + f.Always
	}
	return f
}

// StartReserve is what must be left after a step's bound for it to start: the
// reserve, or the always-steps' bounds if (in a plan validate would refuse) they
// exceed it.
func StartReserve(reserve, always time.Duration) time.Duration {
	return max(reserve, always)
}

func firstIn(addrs []string, set map[string]bool) string {
	for _, a := range addrs {
		if set[a] {
			return a
		}
	}
	return ""
}

// checkOrderFits refuses a repetition-by-repetition order whose extra deploys the
// outage budget cannot hold: by the estimate plan show states (Forecast) the
// engine would defer blocks of the matrix or the deploys its swaps run.
func (p *Plan) checkOrderFits() hcl.Diagnostics {
	var diags hcl.Diagnostics
	var f *Forecast
	for _, m := range p.Matrices {
		mo := m.Ordering
		if mo == nil || len(mo.Deploys) == 0 || p.Campaign.Outage == nil {
			continue
		}
		if f == nil {
			fc := p.Forecast()
			f = &fc
		}
		// Only what the order itself runs counts: a campaign may defer its optional
		// lanes by design, whatever the order.
		own := map[string]bool{}
		for _, a := range mo.Deploys {
			own[a] = true
		}
		for _, s := range mo.Segments {
			for _, b := range s.blocks {
				own[b.Addr] = true
			}
		}
		var deferred []string
		for _, d := range f.Deferred {
			if own[d.Addr] {
				deferred = append(deferred, d.Addr)
			}
		}
		if len(deferred) == 0 {
			continue
		}
		var names []string
		for i, d := range deferred {
			if i == 3 {
				names = append(names, fmt.Sprintf("and %d more", len(deferred)-i))
				break
			}
			names = append(names, d)
		}
		diags = append(diags, errorAt(m.Attrs["order"].Expr.Range(), "Order does not fit the outage",
			"order %q runs %d swap(s), %d of them with a deploy (%s at their bounds), and by plan show's estimate (every step at its bound, one after the other) the outage budget (%s, reserve %s) cannot hold the matrix: the engine may defer %s. Use the declared order, fewer repetitions or a larger budget.",
			mo.Order, mo.Swaps, len(mo.Deploys), p.OrderCost(mo), f.Budget, f.Reserve, strings.Join(names, ", ")))
	}
	return diags
}
