package report

import (
	"fmt"
	"strings"

	"github.com/rigor-bench/rigor/engine"
)

// PostHocLabel is the label of every verdict a post-hoc amendment touches.
const PostHocLabel = "post-hoc, not pre-registered"

// postHocTouches lists the post-hoc amendments that touch the verdict, each with a
// sentence saying what it changed after which measured block: the amendments the
// engine recorded as post-hoc, and those whose changes the journal shows to be
// post-hoc whatever their record says (an amendment recorded before rigor
// classified amendments, such as a rule changed after a campaign completed).
func (ev *evidence) postHocTouches(rule *decisionRule) (nums []int, why []string) {
	matrices := map[string]bool{}
	for _, c := range ev.cells {
		if rule != nil && (c.Arm == rule.BaselineArm || c.Arm == rule.CandidateArm) {
			matrices[c.Matrix] = true
		}
	}
	for _, a := range ev.amendments {
		if a.review == nil || !a.review.PostHoc() {
			continue
		}
		var said []string
		for _, c := range a.review.Review.Of(engine.ClassPostHoc) {
			m, isMatrix := strings.CutPrefix(c.Scope, engine.ScopeMatrix)
			if isMatrix && !matrices[m] {
				continue
			}
			said = append(said, fmt.Sprintf("%s after %s had run", c.Change, c.StartedBlock))
		}
		if len(said) == 0 && a.review.Labelled && !a.review.Review.PostHoc() {
			// Recorded as post-hoc, though nothing in it is now found so: the label
			// stands, and it touches every verdict.
			said = append(said, "recorded with --post-hoc")
		}
		if len(said) == 0 {
			continue
		}
		nums = append(nums, a.Number)
		why = append(why, fmt.Sprintf("amendment %d changed %s", a.Number, strings.Join(said, "; ")))
	}
	return nums, why
}

// labelPostHoc applies the post-hoc amendments to a verdict: it is labelled, says
// what the amended rule would have said, and never promotes.
func (ev *evidence) labelPostHoc(v *Verdict) {
	if ev.unclassified != nil && len(ev.amendments) > 0 {
		v.Promoted = false
		v.Verdict = "not promoted: the amendments cannot be checked against the pre-registration"
		v.Reasons = append([]string{fmt.Sprintf("%s: %v", v.Verdict, ev.unclassified)}, v.Reasons...)
		return
	}
	nums, why := ev.postHocTouches(v.Rule)
	if len(nums) == 0 {
		return
	}
	would := "under the amended rule the verdict would read: " + v.Verdict
	if v.Promoted {
		would = "under the amended rule every criterion holds, which a post-hoc rule can show but never turn into a promotion"
	}
	v.PostHoc, v.PostHocAmendments, v.Promoted = true, nums, false
	v.Verdict = "not promoted: " + PostHocLabel + " (" + strings.Join(why, "; ") + ")"
	v.Reasons = append([]string{fmt.Sprintf("%s: %s; %s", capital(PostHocLabel), strings.Join(why, "; "), would)}, v.Reasons...)
}

// amendmentClass is how the amendments section labels an amendment.
func (a amendment) class() string {
	if a.review != nil && a.review.PostHoc() {
		return PostHocLabel
	}
	return "prospective"
}

func joinInts(xs []int) string {
	var out []string
	for _, x := range xs {
		out = append(out, fmt.Sprint(x))
	}
	return strings.Join(out, ", ")
}
