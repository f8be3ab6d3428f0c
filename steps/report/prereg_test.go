package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/schemas"
)

// amendRule copies a checked-in state and appends an amendment that changes its
// decision rule, as a journal and amendments/0001.json would hold it: labelled
// post-hoc or not. The report must judge it from the journal either way.
func amendRule(t *testing.T, state string, labelled bool, edit func(rule map[string]any)) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "states", state), dir)
	old, _, err := engine.EffectivePlan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var plan map[string]any
	dec := json.NewDecoder(strings.NewReader(string(old)))
	dec.UseNumber()
	if err := dec.Decode(&plan); err != nil {
		t.Fatal(err)
	}
	edit(plan["campaign"].(map[string]any)["decision"].(map[string]any))
	now, err := plans.CanonicalJSON(plan)
	if err != nil {
		t.Fatal(err)
	}
	d, err := plans.DiffPlans(old, now)
	if err != nil {
		t.Fatal(err)
	}
	a := engine.Amendment{Number: 1, Reason: "after review", PreviousSHA256: plans.SHA256Hex(old), PlanSHA256: plans.SHA256Hex(now), Diff: d, Plan: now, PostHoc: labelled}
	b, _ := json.MarshalIndent(a, "", "  ")
	b = append(b, '\n')
	if err := os.MkdirAll(filepath.Join(dir, engine.AmendmentsDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, engine.AmendmentsDir, "0001.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := engine.OpenJournal(filepath.Join(dir, engine.JournalFile), engine.SystemClock{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	mustAppend(t, j, engine.Record{Kind: engine.KindAmendment, Amendment: 1, PlanSHA256: a.PlanSHA256, Reason: a.Reason, Summary: d.Summary(), PostHoc: labelled,
		Artefacts: []engine.Artefact{{Path: "amendments/0001.json", Size: int64(len(b)), SHA256: plans.SHA256Hex(b)}}})
	return dir
}

// TestPostHocRuleCannotPromote: the candidate of verdict-faster is promoted under
// its pre-registered rule. A rule amended after the measured blocks ran, even one
// under which every criterion still holds, is labelled post-hoc in report.md and
// summary.json and does not promote, whether or not its record says post-hoc.
func TestPostHocRuleCannotPromote(t *testing.T) {
	if v := build(t, "verdict-faster").Summary.Promotion; !v.Promoted || v.PostHoc {
		t.Fatalf("the pre-registered rule must promote here: %+v", v)
	}
	for name, labelled := range map[string]bool{"recorded with --post-hoc": true, "recorded without a label": false} {
		t.Run(name, func(t *testing.T) {
			dir := amendRule(t, "verdict-faster", labelled, func(rule map[string]any) { rule["min_gain"] = json.Number("0.04") })
			r, err := Build(dir)
			if err != nil {
				t.Fatal(err)
			}
			v := r.Summary.Promotion
			if v.Rule.MinGain != 0.04 || len(v.Comparisons) != 1 || !v.Comparisons[0].Eligible || !v.Comparisons[0].Holds {
				t.Fatalf("under the amended rule the comparison must hold (so only the label stops it): %+v", v.Comparisons)
			}
			if v.Promoted || !v.PostHoc || len(v.PostHocAmendments) != 1 || v.PostHocAmendments[0] != 1 {
				t.Fatalf("a post-hoc rule promoted: promoted=%t post_hoc=%t amendments=%v", v.Promoted, v.PostHoc, v.PostHocAmendments)
			}
			wantVerdict := `not promoted: post-hoc, not pre-registered (amendment 1 changed campaign.decision.min_gain after block.primary["incumbent_before/c2/r1"] had run)`
			if v.Verdict != wantVerdict {
				t.Errorf("verdict %q\nwant    %q", v.Verdict, wantVerdict)
			}
			if !strings.Contains(v.Reasons[0], "under the amended rule every criterion holds, which a post-hoc rule can show but never turn into a promotion") {
				t.Errorf("the reasons must say what the amended rule would give: %q", v.Reasons[0])
			}
			sum, err := json.Marshal(r.Summary)
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas.Validate("summary", sum); err != nil {
				t.Fatalf("summary.json does not validate: %v", err)
			}
			if !strings.Contains(string(sum), `"promoted":false,"post_hoc":true,`) {
				t.Errorf("summary.json promotion block lacks the label")
			}
			md := string(r.document(nil).markdown())
			for _, w := range []string{
				"Decision: " + wantVerdict,
				`Rule (post-hoc, not pre-registered: amendment 1 touches it after measured data existed) "promotion"`,
				"| 1 | ", "| post-hoc, not pre-registered | after review |",
				"Amendment 1 is post-hoc, not pre-registered: campaign.decision.min_gain (0.05 -> 0.04): the decision rule decides promotion, and block.primary[\"incumbent_before/c2/r1\"], a measured block it affects, started at journal record",
			} {
				if !strings.Contains(md, w) {
					t.Errorf("report.md lacks %q", w)
				}
			}
			if strings.Contains(md, "Pre-registered rule") || strings.Contains(md, "Every amendment is prospective") {
				t.Error("report.md still calls the rule pre-registered")
			}
		})
	}
}

// TestPostHocSchema: summary.json cannot say promoted and post-hoc at once.
func TestPostHocSchema(t *testing.T) {
	r := build(t, "verdict-faster")
	b, err := json.Marshal(r.Summary)
	if err != nil {
		t.Fatal(err)
	}
	forged := strings.Replace(string(b), `"promoted":true,"post_hoc":false`, `"promoted":true,"post_hoc":true,"post_hoc_amendments":[1]`, 1)
	if forged == string(b) {
		t.Fatal("replacement did not apply")
	}
	if err := schemas.Validate("summary", []byte(forged)); err == nil {
		t.Fatal("a promoted post-hoc verdict validates")
	}
}

// TestUncheckableAmendmentCannotPromote: when the plan an amendment changed is gone,
// nothing says the amendment was prospective, and the verdict says so instead of
// promoting.
func TestUncheckableAmendmentCannotPromote(t *testing.T) {
	dir := amendRule(t, "verdict-faster", false, func(rule map[string]any) { rule["min_gain"] = json.Number("0.04") })
	if err := os.Remove(filepath.Join(dir, engine.PlanDir, "plan.json")); err != nil {
		t.Fatal(err)
	}
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	v := r.Summary.Promotion
	if v.Promoted || v.Verdict != "not promoted: the amendments cannot be checked against the pre-registration" || !strings.Contains(v.Reasons[0], "plan.json") {
		t.Fatalf("verdict %+v", v)
	}
	if !slices.ContainsFunc(r.Summary.Integrity, func(p string) bool { return strings.HasPrefix(p, "the amendments cannot be classified") }) {
		t.Errorf("integrity problems %v", r.Summary.Integrity)
	}
}
