package report

import (
	"fmt"
	"slices"
	"strings"
)

// Brief is a state directory's verdict in a few lines: what `rigor plan apply`
// prints when it ends and what `rigor status` shows ("decision" in status --json).
// It is taken from the Verdict that Build computes for summary.json, so the apply's
// last lines, status and the report never disagree.
type Brief struct {
	// CampaignStatus is summary.json's campaign_status: completed, held, ... or
	// "running or crashed" before the campaign's end record.
	CampaignStatus string `json:"campaign_status"`
	// Rule names the pre-registered decision rule; "" when the campaign has none.
	Rule     string `json:"rule,omitempty"`
	Promoted bool   `json:"promoted"`
	// DiagnosticOnly: the rule declares promotion = false.
	DiagnosticOnly bool   `json:"diagnostic_only"`
	Eligible       bool   `json:"eligible"`
	Verdict        string `json:"verdict"`
	// Effects has one line per comparison of the rule: its role, cell and metric,
	// then the gain with its 95% interval and the criterion with whether it holds,
	// or why the comparison is ineligible.
	Effects []string `json:"effects"`
	// Reasons are the verdict's reasons, as summary.json's promotion.reasons.
	Reasons []string `json:"reasons"`
	// notes are the reasons that are about no single comparison (no drift
	// control arm, no rule): Lines shows them after the effects.
	notes []string
}

// BriefFromState reads a state directory and returns its verdict in brief. It
// streams every requests.jsonl, as Build does.
func BriefFromState(dir string) (*Brief, error) {
	r, err := Build(dir)
	if err != nil {
		return nil, err
	}
	return r.Brief(), nil
}

// Brief is the report's verdict in brief.
func (r *Report) Brief() *Brief {
	v := r.Summary.Promotion
	b := &Brief{CampaignStatus: r.Summary.CampaignStatus, Promoted: v.Promoted, DiagnosticOnly: v.DiagnosticOnly, Eligible: v.Eligible, Verdict: v.Verdict,
		Effects: []string{}, Reasons: append([]string{}, v.Reasons...)}
	if v.Rule != nil {
		b.Rule = v.Rule.Name
	}
	var cells []string
	for _, c := range v.Comparisons {
		cells = append(cells, c.Role+" cell "+c.Cell)
		head := fmt.Sprintf("%s %s (%s): ", c.Role, c.Cell, c.Metric)
		switch {
		case !c.Eligible && c.Gain == nil:
			b.Effects = append(b.Effects, head+"ineligible: "+c.Ineligible)
		case !c.Eligible:
			// Drift leaves an effect worth stating beside the reason.
			b.Effects = append(b.Effects, fmt.Sprintf("%s%s %s; ineligible: %s", head, pm(*c.Gain), ivText(c.Interval), c.Ineligible))
		default:
			holds := "does not hold"
			if c.Holds {
				holds = "holds"
			}
			b.Effects = append(b.Effects, fmt.Sprintf("%s%s %s; %s: %s", head, pm(*c.Gain), ivText(c.Interval), c.Criterion, holds))
		}
	}
	// The verdict's reasons about one comparison begin "<role> cell <cell>" (decide);
	// the effects say those, so only the others are notes.
	for _, r := range v.Reasons {
		if !slices.ContainsFunc(cells, func(c string) bool { return strings.HasPrefix(r, c+" ") || strings.HasPrefix(r, c+":") }) {
			b.notes = append(b.notes, r)
		}
	}
	return b
}

// Lines renders the brief for a terminal: the verdict, then one indented line per
// comparison and per reason that concerns no single comparison. A campaign that is
// not closed has a verdict "so far": steps that have not run may still change it.
func (b *Brief) Lines(closed bool) []string {
	label := "verdict: "
	if !closed {
		label = "verdict so far: "
	}
	out := []string{label + b.Verdict}
	for _, e := range append(slices.Clip(b.Effects), b.notes...) {
		out = append(out, "  "+e)
	}
	return out
}

// Text is Lines joined by newlines.
func (b *Brief) Text(closed bool) string { return strings.Join(b.Lines(closed), "\n") }
