package plans_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

const decisionBase = `campaign "d" {}

step "exec" "hello" {
  command = ["echo", "hello"]
}

target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}

matrix "primary" {
  workload    = workload.w
  concurrency = [1, 4]
  repetitions = 3
  requests    = 8
  arm "incumbent" {
    target = target.incumbent
  }
  arm "candidate" {
    target = target.candidate
  }
}

decision "promotion" {
  primary_metric           = "aggregate_output_tok_s"
  primary_cells            = ["c4"]
  baseline_arm             = "incumbent"
  candidate_arm            = "candidate"
  protected_cells          = ["c1"]
  min_gain                 = 0.05
  max_protected_regression = 0.03
  matched_repetitions      = 3
}
`

func writeCampaign(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "campaign.hcl")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecisionEntersCanonicalPlan(t *testing.T) {
	p := mustLoad(t, writeCampaign(t, decisionBase), plans.Options{})
	var doc struct {
		Campaign map[string]json.RawMessage `json:"campaign"`
	}
	if err := json.Unmarshal(mustJSON(t, p), &doc); err != nil {
		t.Fatal(err)
	}
	want := `{"baseline_arm":"incumbent","candidate_arm":"candidate","criterion":"interval","matched_repetitions":3,"matrix":"primary","max_protected_regression":0.03,"min_gain":0.05,"name":"promotion","primary_cells":["c4"],"primary_metric":"aggregate_output_tok_s","protected_cells":["c1"]}`
	if got := string(doc.Campaign["decision"]); got != want {
		t.Fatalf("campaign.decision = %s\nwant %s", got, want)
	}
	// Without a decision block the key is absent, so older plan hashes are unchanged.
	plain := mustLoad(t, writeCampaign(t, decisionBase[:strings.Index(decisionBase, "decision \"promotion\"")]), plans.Options{})
	if strings.Contains(string(mustJSON(t, plain)), `"decision"`) {
		t.Fatal("a plan without a decision block must not carry a decision key")
	}
	// Changing the rule changes the hash and shows in the semantic diff.
	changed := mustLoad(t, writeCampaign(t, strings.Replace(decisionBase, "min_gain                 = 0.05", "min_gain                 = 0.03", 1)), plans.Options{})
	if mustHash(t, changed) == mustHash(t, p) {
		t.Fatal("a changed decision rule must change the plan hash")
	}
	d, err := plans.DiffPlans(mustJSON(t, p), mustJSON(t, changed))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Campaign) != 1 || d.Campaign[0].Path != "decision.min_gain" || d.Campaign[0].Old != "0.05" || d.Campaign[0].New != "0.03" {
		t.Fatalf("diff %+v", d)
	}
}

func TestDecisionDiagnostics(t *testing.T) {
	cases := map[string]struct {
		from, to string
		want     string
	}{
		"unknown metric":      {`"aggregate_output_tok_s"`, `"vibes"`, "Unknown primary metric"},
		"bad cell selector":   {`["c4"]`, `["incumbent/c4"]`, "Invalid cell selector"},
		"same arms":           {`candidate_arm            = "candidate"`, `candidate_arm            = "incumbent"`, "Candidate is the baseline"},
		"gain out of range":   {`min_gain                 = 0.05`, `min_gain                 = -1`, "Value out of range"},
		"unknown attribute":   {`matched_repetitions      = 3`, `matched_repetitions      = 3` + "\n  winner = true", "Unsupported argument"},
		"missing primary":     {`primary_cells            = ["c4"]`, ``, "primary_cells"},
		"duplicate decision":  {`campaign "d" {}`, `campaign "d" {}` + "\n" + decisionBase[strings.Index(decisionBase, "decision \"promotion\""):], "Duplicate decision"},
		"variable not static": {`min_gain                 = 0.05`, `min_gain                 = var.g`, "Variables not allowed"},
		"criterion misspelt": {`matched_repetitions      = 3`, `matched_repetitions      = 3` + "\n  criterion = \"intervall\"",
			`criterion "intervall" is not one of interval, point. Did you mean "interval"?`},
		"percentile metric misspelt": {`"aggregate_output_tok_s"`, `"ttft_p95ms"`, `Did you mean "ttft_p95_ms"?`},
		"drift out of range":         {`matched_repetitions      = 3`, `matched_repetitions      = 3` + "\n  max_drift = 1.5", "max_drift must be between 0 and 1"},
		"zero block cv":              {`matched_repetitions      = 3`, `matched_repetitions      = 3` + "\n  block_cv = 0", "block_cv must be greater than 0"},
		"criterion not a name":       {`matched_repetitions      = 3`, `matched_repetitions      = 3` + "\n  criterion = 3", `criterion "3" is not one of interval, point.`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(decisionBase, tc.from, tc.to, 1)
			if src == decisionBase {
				t.Fatal("replacement did not apply")
			}
			if name == "duplicate decision" {
				src = strings.Replace(src, `decision "promotion"`, `decision "other"`, 1)
			}
			_, diags := load(t, writeCampaign(t, src), plans.Options{})
			if !diags.HasErrors() || !strings.Contains(diags.Error(), tc.want) {
				t.Fatalf("want an error mentioning %q, got %s", tc.want, diags.Error())
			}
			for _, d := range diags {
				if d.Subject == nil || d.Subject.Start.Line == 0 {
					t.Errorf("diagnostic %q has no source range", d.Summary)
				}
			}
		})
	}
}

// TestDecisionNewAttributes: the criterion defaults to interval; a declared
// max_drift and block_cv enter the canonical plan, and undeclared ones are absent so
// the report can tell a declared bound from its default.
func TestDecisionNewAttributes(t *testing.T) {
	cases := map[string]struct {
		extra string
		want  map[string]any
	}{
		"defaults": {"", map[string]any{"criterion": "interval"}},
		"point with bounds": {"\n  criterion = \"point\"\n  max_drift = 0.02\n  block_cv = 0.015",
			map[string]any{"criterion": "point", "max_drift": 0.02, "block_cv": 0.015}},
		"energy metric": {"", map[string]any{"criterion": "interval", "primary_metric": "joules_per_output_token"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(decisionBase, "matched_repetitions      = 3", "matched_repetitions      = 3"+tc.extra, 1)
			if m, ok := tc.want["primary_metric"]; ok {
				src = strings.Replace(src, `"aggregate_output_tok_s"`, `"`+m.(string)+`"`, 1)
			}
			p := mustLoad(t, writeCampaign(t, src), plans.Options{})
			var doc struct {
				Campaign struct {
					Decision map[string]any `json:"decision"`
				} `json:"campaign"`
			}
			if err := json.Unmarshal(mustJSON(t, p), &doc); err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if doc.Campaign.Decision[k] != v {
					t.Errorf("%s = %v, want %v", k, doc.Campaign.Decision[k], v)
				}
			}
			for _, k := range []string{"max_drift", "block_cv"} {
				if _, declared := tc.want[k]; !declared {
					if _, present := doc.Campaign.Decision[k]; present {
						t.Errorf("%s is present though not declared", k)
					}
				}
			}
		})
	}
	// The default drift bound is half the smallest effect the rule must resolve.
	p := mustLoad(t, writeCampaign(t, decisionBase), plans.Options{})
	if got := p.Decision.DefaultMaxDrift(); got != 0.015 {
		t.Errorf("default max_drift = %v, want 0.015 (half of the 3%% protected bound)", got)
	}
}

// TestDecisionByReference: the rule's matrix, arms and cells are checked against the
// plan when it is loaded, each problem at the value's own line with a suggestion,
// and a rule whose arms two matrices share must name its matrix.
func TestDecisionByReference(t *testing.T) {
	second := `
matrix "extended" {
  workload    = workload.w
  concurrency = [8]
  requests    = 8
  repetitions = 3
  arm "incumbent" {
    target = target.incumbent
  }
  arm "candidate" {
    target = target.candidate
  }
}
`
	line := func(src, s string) int { return strings.Count(src[:strings.Index(src, s)], "\n") + 1 }
	cases := map[string]struct {
		from, to string
		extra    string
		summary  string
		detail   string
		at       string // the text whose line the diagnostic must point at
	}{
		"baseline arm typo": {from: `baseline_arm             = "incumbent"`, to: `baseline_arm             = "incumbentt"`,
			summary: "Reference to undeclared arm", detail: `Matrix "primary" has no arm "incumbentt". Did you mean "incumbent"?`, at: `"incumbentt"`},
		"candidate arm typo": {from: `candidate_arm            = "candidate"`, to: `candidate_arm            = "candidat"`,
			summary: "Reference to undeclared arm", detail: `Did you mean "candidate"?`, at: `"candidat"`},
		"primary cell not run": {from: `primary_cells            = ["c4"]`, to: `primary_cells            = ["c1", "c64"]`,
			summary: "Unknown cell", detail: `primary_cells names "c64", but matrix "primary" runs no such concurrency. Did you mean "c4"? Its cells: c1, c4.`, at: `"c64"`},
		"protected cell not run": {from: `protected_cells          = ["c1"]`, to: `protected_cells          = ["c2"]`,
			summary: "Unknown cell", detail: `protected_cells names "c2"`, at: `["c2"]`},
		"matrix typo": {from: `decision "promotion" {`, to: "decision \"promotion\" {\n  matrix = step.block.primery",
			summary: "Reference to undeclared matrix", detail: `There is no matrix "primery". Did you mean "primary"?`, at: `step.block.primery`},
		"matrix not a reference": {from: `decision "promotion" {`, to: "decision \"promotion\" {\n  matrix = \"primary\"",
			summary: "Invalid matrix reference", detail: "matrix = step.block.primary", at: `matrix = "primary"`},
		"two matrices with the arms": {extra: second,
			summary: "Ambiguous decision rule", detail: `The matrices primary and extended all have arms "incumbent" and "candidate"; name the one the rule compares, such as matrix = step.block.primary.`, at: `decision "promotion"`},
		"named matrix lacks the cell": {extra: second, from: `decision "promotion" {`, to: "decision \"promotion\" {\n  matrix = step.block.extended",
			summary: "Unknown cell", detail: `matrix "extended" runs no such concurrency.`, at: `["c4"]`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := decisionBase + tc.extra
			if tc.from != "" {
				src = strings.Replace(src, tc.from, tc.to, 1)
			}
			_, diags := load(t, writeCampaign(t, src), plans.Options{})
			errs := errorsOf(diags)
			if len(errs) == 0 {
				t.Fatalf("want an error, got none")
			}
			e := errs[0]
			if e.Summary != tc.summary || !strings.Contains(e.Detail, tc.detail) {
				t.Fatalf("got %q: %s\nwant %q containing %q", e.Summary, e.Detail, tc.summary, tc.detail)
			}
			if want := line(src, tc.at); e.Subject == nil || e.Subject.Start.Line != want {
				t.Fatalf("diagnostic at %v, want line %d (%s)", e.Subject, want, tc.at)
			}
		})
	}
	// Named, the same two matrices are no longer ambiguous, and the rule compares
	// the named one.
	src := strings.Replace(decisionBase+second, `decision "promotion" {`, "decision \"promotion\" {\n  matrix = step.block.extended", 1)
	src = strings.Replace(src, `primary_cells            = ["c4"]`, `primary_cells            = ["c8"]`, 1)
	src = strings.Replace(src, `protected_cells          = ["c1"]`, `protected_cells          = []`, 1)
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	if p.Decision.Matrix != "extended" {
		t.Fatalf("rule compares matrix %q, want extended", p.Decision.Matrix)
	}
}

// TestDecisionPromotionSwitch: promotion = false enters the canonical plan (so it
// is pre-registered like the rest of the rule) and must be a bool.
func TestDecisionPromotionSwitch(t *testing.T) {
	src := strings.Replace(decisionBase, `decision "promotion" {`, "decision \"promotion\" {\n  promotion = false", 1)
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	if p.Decision.Promotion {
		t.Fatal("promotion = false was not read")
	}
	if !strings.Contains(string(mustJSON(t, p)), `"promotion":false`) {
		t.Fatal("the canonical plan does not carry promotion = false")
	}
	if strings.Contains(string(mustJSON(t, mustLoad(t, writeCampaign(t, decisionBase), plans.Options{}))), `"promotion":`) {
		t.Fatal("a promoting rule must read as it always did: no promotion key")
	}
	bad := strings.Replace(decisionBase, `decision "promotion" {`, "decision \"promotion\" {\n  promotion = \"no\"", 1)
	_, diags := load(t, writeCampaign(t, bad), plans.Options{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "promotion must be true") {
		t.Fatalf("want a type error for promotion = \"no\", got %s", diags.Error())
	}
}

// TestMatrixPhase: a matrix's repetitions take its phase (measured by default),
// priming blocks stay "priming", a phase outside MatrixPhases is refused with a
// suggestion, and a decision rule may not judge an unmeasured matrix.
func TestMatrixPhase(t *testing.T) {
	withPhase := func(phase string) string {
		return strings.Replace(decisionBase, "  repetitions = 3\n", "  repetitions = 3\n  priming     = true\n  phase       = "+phase+"\n", 1)
	}
	noRule := func(src string) string { return src[:strings.Index(src, `decision "promotion"`)] }
	p := mustLoad(t, writeCampaign(t, noRule(withPhase(`"diagnostic"`))), plans.Options{})
	for addr, want := range map[string]string{`block.primary["candidate/c4/r2"]`: "diagnostic", `block.primary["candidate/c4/prime"]`: "priming"} {
		inst, ok := p.Instance(addr)
		if !ok {
			t.Fatalf("no %s", addr)
		}
		if inst.Meta.Phase != want || inst.Config().GetAttr("phase").AsString() != want {
			t.Errorf("%s phase = %q (config %q), want %q", addr, inst.Meta.Phase, inst.Config().GetAttr("phase").AsString(), want)
		}
	}
	def := mustLoad(t, writeCampaign(t, decisionBase), plans.Options{})
	if inst, _ := def.Instance(`block.primary["candidate/c4/r2"]`); inst.Meta.Phase != "measured" {
		t.Errorf("default phase = %q, want measured", inst.Meta.Phase)
	}
	cases := map[string]struct {
		src, summary, detail string
	}{
		"misspelt":           {noRule(withPhase(`"diagnostc"`)), "Invalid phase", `one of measured, pilot, diagnostic. Did you mean "diagnostic"?`},
		"not a matrix phase": {noRule(withPhase(`"restore"`)), "Invalid phase", "one of measured, pilot, diagnostic."},
		"rule on a pilot":    {withPhase(`"pilot"`), "Decision rule on an unmeasured matrix", `Matrix "primary" has phase "pilot": a decision rule judges measured blocks only.`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := load(t, writeCampaign(t, tc.src), plans.Options{})
			errs := errorsOf(diags)
			if len(errs) == 0 || errs[0].Summary != tc.summary || !strings.Contains(errs[0].Detail, tc.detail) || errs[0].Subject == nil {
				t.Fatalf("want %q containing %q at a range, got %s", tc.summary, tc.detail, diags.Error())
			}
		})
	}
}
