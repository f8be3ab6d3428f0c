package report

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestBriefFromState: the brief that `plan apply` and `status` print says what the
// report's verdict says, one line per comparison, with the figure and the criterion
// that decided it or why the comparison is ineligible; a campaign that is not
// closed has a verdict "so far".
func TestBriefFromState(t *testing.T) {
	cases := map[string]struct {
		closed bool
		want   []string
	}{
		"verdict-faster": {closed: true, want: []string{
			"verdict: promoted: every pre-registered criterion holds",
			"  primary c2 (aggregate_output_tok_s): +11.03% [+8.40%, +13.67%] (t, n = 4); lower bound of the 95% interval of the gain ≥ 5.00%: holds",
			"  every primary gain and protected regression is within the rule",
		}},
		"verdict-noisy": {closed: true, want: []string{
			"verdict: not promoted: a pre-registered criterion does not hold",
			"  primary c2 (aggregate_output_tok_s): +5.33% [−4.82%, +15.49%] (t, n = 4); lower bound of the 95% interval of the gain ≥ 5.00%: does not hold",
		}},
		"verdict-drift": {closed: true, want: []string{
			"verdict: not promoted: the comparison is ineligible",
			"  primary c2 (aggregate_output_tok_s): +24.61% [+23.68%, +25.54%] (t, n = 4); ineligible: drift of −22.78% between incumbent_before and incumbent_after exceeds what the rule can resolve (max_drift 10.00%, declared max_drift)",
		}},
		"stop-blocked": {closed: false, want: []string{
			"verdict so far: not promoted: the comparison is ineligible",
			"  primary c2 (aggregate_output_tok_s): ineligible: primary/candidate/c2 is blocked; drift control primary/incumbent_after/c2 is blocked",
			"  protected c1 (aggregate_output_tok_s): ineligible: primary/candidate/c1 has 6 failed request(s); primary/candidate/c1 is failed; drift control primary/incumbent_after/c1 is blocked",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "states", name)
			b, err := BriefFromState(dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, b.Lines(tc.closed)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
			// The brief is the report's verdict, not a second computation of it.
			v := build(t, name).Summary.Promotion
			if b.Verdict != v.Verdict || b.Promoted != v.Promoted || b.Eligible != v.Eligible || b.Rule != v.Rule.Name {
				t.Errorf("brief %+v differs from summary.json's promotion %q promoted=%v eligible=%v rule=%q", b, v.Verdict, v.Promoted, v.Eligible, v.Rule.Name)
			}
			if diff := cmp.Diff(v.Reasons, b.Reasons); diff != "" {
				t.Errorf("reasons (-summary +brief):\n%s", diff)
			}
		})
	}
}

// TestBriefWithoutRule: a campaign without a decision block says so, with the
// reason, and names no rule.
func TestBriefWithoutRule(t *testing.T) {
	r := &Report{Summary: Summary{CampaignStatus: "completed", Promotion: Verdict{
		Verdict: "no decision rule was pre-registered: nothing is promoted and no ranking is made",
		Reasons: []string{"the campaign has no decision block"},
	}}}
	b := r.Brief()
	want := []string{
		"verdict: no decision rule was pre-registered: nothing is promoted and no ranking is made",
		"  the campaign has no decision block",
	}
	if diff := cmp.Diff(want, b.Lines(true)); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
	if b.Rule != "" || b.Promoted || len(b.Effects) != 0 {
		t.Errorf("brief without a rule: %+v", b)
	}
}
