package main

import (
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/report"
)

// pilotGate is apply's engine gate (engine.Options.Gate). Once every pilot step has
// settled, before the next step starts, it logs what the pilot says the design can
// resolve (the lines rigor status prints) so an unresolvable rule is seen before any
// candidate traffic. With hold it also holds the campaign there while the rule
// cannot be resolved and can still be amended prospectively. Nil when the plan has
// no pilot: there is no point after which to tell.
func pilotGate(view progressView, p *plans.Plan, state string, hold bool) func(*plans.Instance, func(string) bool) string {
	pilots := pilotAddrs(p)
	if len(pilots) == 0 {
		return nil
	}
	told, asked := false, false
	return func(next *plans.Instance, settled func(string) bool) string {
		if told {
			return ""
		}
		if next.Meta.Phase == "pilot" {
			asked = true // a pilot runs in this apply
			return ""
		}
		for _, a := range pilots {
			if !settled(a) {
				asked = true
				return ""
			}
		}
		// A pilot that settled in an earlier apply was told then; only a hold needs
		// the estimate again (reading it reads the whole state).
		if !asked && !hold {
			told = true
			return ""
		}
		told = true
		l := view.logger()
		est, err := report.PowerFromState(state)
		switch {
		case err != nil && hold:
			// Asked to hold unless the rule is known to resolve: unknown is not known.
			return "the minimum detectable effect was not estimated after the pilot (" + err.Error() + "); --hold-unresolvable holds the campaign here, before any candidate traffic"
		case err != nil:
			l.Warn().Msg("after the pilot: the minimum detectable effect was not estimated: " + err.Error())
			return ""
		case est == nil:
			return "" // no decision rule: nothing to resolve (apply refuses the hold then)
		}
		for _, line := range est.Lines() {
			if est.Flag != "" && line == "FLAG: "+est.Flag {
				l.Warn().Msg(line)
				continue
			}
			l.Info().Msg(line)
		}
		switch {
		case !hold || est.Resolvable:
		case est.RuleLockedBy != "":
			l.Warn().Msg("--hold-unresolvable does not hold: " + est.RuleLockedBy + " has started, so amending the rule now is post-hoc; the campaign runs the rule as declared")
		case est.CandidateStarted:
			l.Warn().Msg("--hold-unresolvable does not hold: candidate traffic has started (a block of the candidate arm has run); the campaign runs the rule as declared")
		default:
			return est.Flag + "; --hold-unresolvable holds the campaign here, before any candidate traffic: amend the rule and apply again, or apply without --hold-unresolvable to run it as declared"
		}
		return ""
	}
}

// holdPointMissing says why --hold-unresolvable would have nothing to do with p: no
// pilot step (nothing after which the rule's resolution is known) or no decision
// rule (nothing to resolve); "" when it applies.
func holdPointMissing(p *plans.Plan) string {
	if p.Decision == nil {
		return "the campaign has no decision block, so there is no rule whose resolution the pilot could tell"
	}
	if len(pilotAddrs(p)) > 0 {
		return ""
	}
	return `the campaign has no pilot step (phase = "pilot"), so there is no point after which to hold`
}

// pilotAddrs are the addresses of p's pilot instances, in run order.
func pilotAddrs(p *plans.Plan) []string {
	var pilots []string
	for _, in := range p.Instances {
		if in.Meta.Phase == "pilot" {
			pilots = append(pilots, in.Addr)
		}
	}
	return pilots
}
