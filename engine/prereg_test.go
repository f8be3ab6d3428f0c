package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/schemas"
	"github.com/zclconf/go-cty/cty"
)

// cellProbe stands in for the block step type so matrices expand in engine tests:
// it takes every argument a matrix gives a block and records that it ran.
type cellProbe struct{ p *probe }

func (c cellProbe) Spec() hcldec.ObjectSpec {
	s := hcldec.ObjectSpec{}
	for _, n := range []string{"target", "workload", "concurrency", "requests", "repetition", "arm", "cell", "gates", "phase", "primed", "reset_cache", "expect_cache", "corpus_seed"} {
		s[n] = &hcldec.AttrSpec{Name: n, Type: cty.DynamicPseudoType}
	}
	return s
}

func (c cellProbe) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"requests": cty.Number})
}

func (c cellProbe) Run(_ context.Context, sc *engine.StepContext) engine.Result {
	c.p.mu.Lock()
	c.p.order = append(c.p.order, sc.Addr)
	c.p.mu.Unlock()
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{"requests": cty.NumberIntVal(4)}))
}

// preregBase runs the incumbent arm's four measured blocks, then a stop-class
// failure holds the campaign before the candidate arm: measured data exist, and the
// candidate's deploy and blocks are held back for a continued apply.
const preregBase = `
campaign "pr" {
  description = "pre-registration"
  frozen      = ["corpus.txt"]
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

target "incumbent" {
  endpoint = "http://127.0.0.1:1"
}

target "candidate" {
  endpoint = "http://127.0.0.1:2"
}

workload "w" {
  max_tokens = 16 # short
}

step "world" "deploy_incumbent" {
  key = "node"
}

step "probe" "stopper" {
  fail       = "gate"
  depends_on = [step.block.primary["incumbent/c4/r2"]]
}

step "world" "deploy_candidate" {
  key = "node"
}

matrix "primary" {
  workload    = workload.w
  concurrency = [1, 4]
  repetitions = 2
  requests    = 4

  arm "incumbent" {
    target = target.incumbent
    setup  = [step.world.deploy_incumbent]
  }
  arm "candidate" {
    target = target.candidate
    setup  = [step.world.deploy_candidate]
  }
}

decision "promotion" {
  primary_metric      = "aggregate_output_tok_s"
  primary_cells       = ["c4"]
  baseline_arm        = "incumbent"
  candidate_arm       = "candidate"
  min_gain            = 0.05
  matched_repetitions = 2
}
`

func newPreregHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t)
	h.reg["block"] = cellProbe{p: h.probe}
	if err := os.WriteFile(filepath.Join(h.dir, "corpus.txt"), []byte("corpus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := h.apply(context.Background(), h.load(preregBase))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld {
		t.Fatalf("the base campaign must be held after the stopper, got %+v", sum)
	}
	return h
}

func edit(t *testing.T, src string, pairs ...string) string {
	t.Helper()
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(src, pairs[i]) {
			t.Fatalf("edit %q does not apply", pairs[i])
		}
		src = strings.Replace(src, pairs[i], pairs[i+1], 1)
	}
	return src
}

// ruleRemoved adds to want the post-hoc removal of every field of preregBase's rule.
func ruleRemoved(want map[string]string) map[string]string {
	for _, f := range []string{"baseline_arm", "candidate_arm", "criterion", "matched_repetitions", "matrix", "max_protected_regression",
		"min_gain", "name", "primary_cells", "primary_metric", "protected_cells"} {
		want["campaign.decision."+f] = engine.ClassPostHoc
	}
	return want
}

// TestPreRegistration: each kind of change is classified as engine semantics 10
// says, recording follows the class, and a refusal names the change, why it shapes
// the analysis and the measured block that makes it post-hoc.
func TestPreRegistration(t *testing.T) {
	const firstMeasured = `block.primary["incumbent/c1/r1"]`
	cases := map[string]struct {
		edits []string
		// want maps each change to its class; changes not listed must be prospective
		// without shaping anything.
		want map[string]string
		// refused holds what the refusal without --post-hoc says; "" when it records.
		refused []string
	}{
		"decision threshold lowered": {
			edits:   []string{"min_gain            = 0.05", "min_gain            = 0.01"},
			want:    map[string]string{"campaign.decision.min_gain": engine.ClassPostHoc},
			refused: []string{"campaign.decision.min_gain (0.05 -> 0.01): the decision rule decides promotion, and " + firstMeasured + ", a measured block it affects, started at journal record", "--post-hoc"},
		},
		"candidate arm and cells changed, with a new arm": {
			edits: []string{`candidate_arm       = "candidate"`, `candidate_arm       = "candidate_2"`, `primary_cells       = ["c4"]`, `primary_cells       = ["c1", "c4"]`,
				"  arm \"candidate\" {", "  arm \"candidate_2\" {\n    target = target.candidate\n  }\n  arm \"candidate\" {"},
			want: map[string]string{"campaign.decision.candidate_arm": engine.ClassPostHoc, "campaign.decision.primary_cells": engine.ClassPostHoc},
			refused: []string{"campaign.decision.candidate_arm (\"candidate\" -> \"candidate_2\"): the decision rule decides promotion",
				"campaign.decision.primary_cells ([\"c4\"] -> [\"c1\",\"c4\"])"},
		},
		"outage budget": {
			edits:   []string{`budget  = "90m"`, `budget  = "120m"`},
			want:    map[string]string{"campaign.outage.budget_s": engine.ClassPostHoc},
			refused: []string{"the outage budget and reserve decide which measured blocks run and which are deferred"},
		},
		"frozen inputs": {
			edits:   []string{`frozen      = ["corpus.txt"]`, `frozen      = []`},
			want:    map[string]string{"campaign.frozen": engine.ClassPostHoc},
			refused: []string{"the frozen inputs are what every measured block is held to"},
		},
		"candidate arm removed before it ran": {
			// The rule names the arm, so it goes too: a rule may not name an arm the
			// plan does not have.
			edits: []string{"  arm \"candidate\" {\n    target = target.candidate\n    setup  = [step.world.deploy_candidate]\n  }\n", "",
				preregBase[strings.Index(preregBase, "decision \"promotion\""):], ""},
			want: ruleRemoved(map[string]string{
				`block.primary["candidate/c1/r1"]`: engine.ClassPostHoc, `block.primary["candidate/c1/r2"]`: engine.ClassPostHoc,
				`block.primary["candidate/c4/r1"]`: engine.ClassPostHoc, `block.primary["candidate/c4/r2"]`: engine.ClassPostHoc,
			}),
			refused: []string{`block.primary["candidate/c1/r1"] (removed): the blocks of a matrix are its arms, cells and repetitions`},
		},
		"description": {edits: []string{`description = "pre-registration"`, `description = "pre-registration, reviewed"`}},
		"a repetition added after sibling cells ran": {
			// The candidate's deploy now waits for the incumbent's r3 blocks too.
			edits: []string{"repetitions = 2", "repetitions = 3"},
		},
		"an arm added after sibling arms ran": {
			edits: []string{"  arm \"candidate\" {", "  arm \"incumbent_after\" {\n    target = target.incumbent\n  }\n  arm \"candidate\" {"},
		},
		"an incumbent arm added after the candidate": {
			// It becomes the rule's drift control: the rule now compares the
			// candidate with a baseline it did not have when the data came in.
			edits:   []string{"    setup  = [step.world.deploy_candidate]\n  }\n", "    setup  = [step.world.deploy_candidate]\n  }\n  arm \"incumbent_after\" {\n    target = target.incumbent\n  }\n"},
			want:    map[string]string{"drift control of the decision rule": engine.ClassPostHoc},
			refused: []string{"drift control of the decision rule ((absent) -> incumbent_after): the decision rule compares the candidate with the mean of the baseline and its drift-control arm"},
		},
		"a cell added after sibling cells ran": {edits: []string{"concurrency = [1, 4]", "concurrency = [1, 4, 8]"}},
		"started blocks changed": {
			edits: []string{"requests    = 4", "requests    = 8"},
			want: map[string]string{
				`block.primary["incumbent/c1/r1"]`: engine.ClassRewrite, `block.primary["incumbent/c1/r2"]`: engine.ClassRewrite,
				`block.primary["incumbent/c4/r1"]`: engine.ClassRewrite, `block.primary["incumbent/c4/r2"]`: engine.ClassRewrite,
				// The candidate's blocks have not run, but their matrix has data.
				`block.primary["candidate/c1/r1"]`: engine.ClassPostHoc, `block.primary["candidate/c1/r2"]`: engine.ClassPostHoc,
				`block.primary["candidate/c4/r1"]`: engine.ClassPostHoc, `block.primary["candidate/c4/r2"]`: engine.ClassPostHoc,
			},
			refused: []string{"would rewrite evidence", `block.primary["incumbent/c1/r1"] (changed: config.requests): it started (journal record`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := newPreregHarness(t)
			p := h.load(edit(t, preregBase, tc.edits...))
			prop, err := engine.DiffAgainstState(h.state, p)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, c := range prop.Review {
				if c.Class != engine.ClassProspective || c.Shapes != "" && !strings.HasPrefix(c.Change, "campaign.description") {
					got[c.Change] = c.Class
				}
			}
			want := tc.want
			if want == nil {
				want = map[string]string{}
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("classes (-want +got):\n%s", d)
			}
			postHoc := slices.ContainsFunc(prop.Review, func(c engine.ChangeReview) bool { return c.Class == engine.ClassPostHoc })
			rewrite := slices.ContainsFunc(prop.Review, func(c engine.ChangeReview) bool { return c.Class == engine.ClassRewrite })
			_, err = engine.RecordAmendment(h.state, p, "review", h.clock)
			if len(tc.refused) == 0 {
				if err != nil {
					t.Fatalf("a prospective amendment is refused: %v", err)
				}
				return
			}
			if !errors.Is(err, engine.ErrAmendmentRefused) {
				t.Fatalf("want a refusal, got %v", err)
			}
			for _, w := range tc.refused {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("refusal lacks %q:\n%v", w, err)
				}
			}
			a, err := engine.RecordPostHocAmendment(h.state, p, "review asked for it", h.clock)
			switch {
			case rewrite:
				if !errors.Is(err, engine.ErrAmendmentRefused) || !strings.Contains(err.Error(), "no label makes that allowed") {
					t.Fatalf("--post-hoc must not allow rewriting evidence: %v", err)
				}
				return
			case postHoc && err != nil:
				t.Fatalf("--post-hoc refused: %v", err)
			}
			assertPostHocRecorded(t, h, a.Number)
		})
	}
}

// assertPostHocRecorded checks that the journal record and amendments/NNNN.json of
// amendment n both say post-hoc, and that the report's re-classification agrees.
func assertPostHocRecorded(t *testing.T, h *harness, n int) {
	t.Helper()
	recs := h.records()
	last := recs[len(recs)-1]
	if last.Kind != engine.KindAmendment || last.Amendment != n || !last.PostHoc {
		t.Fatalf("journal record %+v, want amendment %d marked post_hoc", last, n)
	}
	lines := strings.Split(strings.TrimSpace(string(mustRead(t, filepath.Join(h.state, engine.JournalFile)))), "\n")
	if err := schemas.Validate("journal-record", []byte(lines[len(lines)-1])); err != nil {
		t.Errorf("the post-hoc amendment record does not validate: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(h.state, "amendments", "0001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		PostHoc bool `json:"post_hoc"`
		Review  []struct {
			Class        string `json:"class"`
			StartedBlock string `json:"started_block"`
		} `json:"review"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || !doc.PostHoc || !slices.ContainsFunc(doc.Review, func(c struct {
		Class        string `json:"class"`
		StartedBlock string `json:"started_block"`
	}) bool {
		return c.Class == engine.ClassPostHoc && c.StartedBlock != ""
	}) {
		t.Fatalf("amendments/0001.json must say post_hoc with the started block: %s (%v)", b, err)
	}
	revs, err := engine.ReviewRecorded(h.state, recs)
	if err != nil || len(revs) != 1 || !revs[0].PostHoc() || !revs[0].Review.PostHoc() {
		t.Fatalf("re-classified from the journal: %+v, %v", revs, err)
	}
}

// TestPostHocLabelNeverMislabels: --post-hoc on a change that is prospective is
// refused, so the label means what it says.
func TestPostHocLabelNeverMislabels(t *testing.T) {
	h := newPreregHarness(t)
	p := h.load(edit(t, preregBase, "repetitions = 2", "repetitions = 3"))
	_, err := engine.RecordPostHocAmendment(h.state, p, "more data", h.clock)
	if !errors.Is(err, engine.ErrAmendmentRefused) || !strings.Contains(err.Error(), "every change is prospective") {
		t.Fatalf("want the mislabel refused, got %v", err)
	}
	if recs := h.records(); recs[len(recs)-1].Kind == engine.KindAmendment {
		t.Fatal("a refused amendment left a record")
	}
}

// TestAmendedRepetitionRuns: a repetition added after the incumbent's cells ran is
// recorded as prospective, and the next apply continues the held campaign with it:
// the incumbent's new blocks run before the candidate's deploy (the arms keep their
// order), every candidate block runs, and the campaign completes.
func TestAmendedRepetitionRuns(t *testing.T) {
	h := newPreregHarness(t)
	before := len(h.probe.ran())
	p := h.load(edit(t, preregBase, "repetitions = 2", "repetitions = 3"))
	a, err := engine.RecordAmendment(h.state, p, "a third repetition", h.clock)
	if err != nil || a.PostHoc {
		t.Fatalf("amendment %+v: %v", a, err)
	}
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	// Everything that could run ran; the stopper's failure keeps the campaign held
	// for review until a person closes it.
	if sum.Status != engine.EndHeld || !strings.Contains(sum.Reason, "nothing left can run, but probe.stopper failed") {
		t.Fatalf("the continued campaign must run everything left: %+v", sum)
	}
	ran := h.probe.ran()[before:]
	want := []string{
		`block.primary["incumbent/c1/r3"]`, `block.primary["incumbent/c4/r3"]`, "world.deploy_candidate",
		`block.primary["candidate/c1/r1"]`, `block.primary["candidate/c1/r2"]`, `block.primary["candidate/c1/r3"]`,
		`block.primary["candidate/c4/r1"]`, `block.primary["candidate/c4/r2"]`, `block.primary["candidate/c4/r3"]`,
	}
	var got []string
	for _, a := range ran {
		if a != "world.deploy_incumbent" {
			got = append(got, a)
		}
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("what the continued apply ran (-want +got):\n%s", d)
	}
	if !slices.Contains(ran, "world.deploy_incumbent") || slices.Index(ran, "world.deploy_incumbent") > slices.Index(ran, `block.primary["incumbent/c1/r3"]`) {
		t.Errorf("the incumbent's deploy, undone by the restore, must run again before its new blocks: %v", ran)
	}
	if f := h.finals(); f["probe.stopper"].Status != engine.StatusFailed || f[`block.primary["incumbent/c1/r1"]`].Attempt != 1 {
		t.Errorf("nothing that ran before runs again: %+v", f["probe.stopper"])
	}
}

// TestCommentInStartedStep: a comment edited inside a step that ran is no change:
// the diff is empty, recording finds nothing to amend, and apply goes on.
func TestCommentInStartedStep(t *testing.T) {
	h := newPreregHarness(t)
	p := h.load(edit(t, preregBase, "max_tokens = 16 # short", "# the shortest completion that still measures decode\n  max_tokens = 16",
		"  repetitions = 2\n", "  repetitions = 2 # as pre-registered\n\n"))
	prop, err := engine.DiffAgainstState(h.state, p)
	if err != nil || !prop.Diff.Empty() {
		t.Fatalf("a comment is no change: %+v %v", prop, err)
	}
	if _, err := engine.RecordAmendment(h.state, p, "comments", h.clock); !errors.Is(err, engine.ErrAmendmentRefused) || !strings.Contains(err.Error(), "nothing to amend") {
		t.Fatalf("want nothing to amend, got %v", err)
	}
	sum, err := h.apply(context.Background(), p)
	if err != nil || !strings.Contains(sum.Reason, "nothing left can run") {
		t.Fatalf("apply with the commented file must go on as if nothing changed: %+v %v", sum, err)
	}
}

// TestClosedAcceptsNoAmendment: after a campaign closed, the attack (candidate arm,
// cells and thresholds changed after all the data exist) is refused, with or
// without --post-hoc, and so is a prospective change.
func TestClosedAcceptsNoAmendment(t *testing.T) {
	h := newPreregHarness(t)
	if _, err := engine.Close(h.state, "reviewed", h.clock); err != nil {
		t.Fatal(err)
	}
	attack := h.load(edit(t, preregBase, `candidate_arm       = "candidate"`, `candidate_arm       = "candidate_2"`,
		`primary_cells       = ["c4"]`, `primary_cells       = ["c1"]`, "min_gain            = 0.05", "min_gain            = 0",
		"  arm \"candidate\" {", "  arm \"candidate_2\" {\n    target = target.candidate\n  }\n  arm \"candidate\" {"))
	for name, record := range map[string]func() error{
		"prospective": func() error { _, err := engine.RecordAmendment(h.state, attack, "x", h.clock); return err },
		"post-hoc":    func() error { _, err := engine.RecordPostHocAmendment(h.state, attack, "x", h.clock); return err },
		"an added step": func() error {
			_, err := engine.RecordAmendment(h.state, h.load(preregBase+`step "probe" "later" {}`+"\n"), "x", h.clock)
			return err
		},
	} {
		if err := record(); !errors.Is(err, engine.ErrAmendmentRefused) || !strings.Contains(err.Error(), "closed campaign accepts no amendment") {
			t.Errorf("%s: want the closed refusal, got %v", name, err)
		}
	}
	if n := len(h.records()); h.records()[n-1].Kind != engine.KindCampaignClosed {
		t.Fatal("a refused amendment left a record")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
