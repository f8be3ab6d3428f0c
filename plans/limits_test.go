package plans_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// deepSources are constructs that make hclsyntax recurse once per level; at 100,000
// levels each of the first ones used to end the process with "fatal error: stack
// overflow", and operator chains did at a million.
func deepSources(n int) map[string]string {
	r := strings.Repeat
	return map[string]string{
		"parentheses":      "x = " + r("(", n) + "1" + r(")", n) + "\n",
		"brackets":         "x = " + r("[", n) + r("]", n) + "\n",
		"objects":          "x = " + r("{a=", n) + "1" + r("}", n) + "\n",
		"blocks":           r("a {\n", n) + r("}\n", n),
		"calls":            "x = " + r("f(", n) + "1" + r(")", n) + "\n",
		"interpolations":   "x = " + r(`"${`, n) + "1" + r(`}"`, n) + "\n",
		"directives":       "x = \"" + r("%{if true}", n) + "a" + r("%{endif}", n) + "\"\n",
		"stripped":         "x = \"" + r("%{~ for i in [1] ~}", n) + "a" + r("%{~ endfor ~}", n) + "\"\n",
		"negations":        "x = " + r("!", n) + "true\n",
		"conditionals":     "x = " + r("true ? 1 : ", n) + "2\n",
		"operators":        "x = 1" + r(" + 1", n) + "\n",
		"heredocs":         "x = " + r("<<EOT\n${", n) + "1" + r("}\nEOT\n", n),
		"splats":           "x = [1]" + r("[*]", n) + "\n",
		"attr splats":      "x = a" + r(".*", n) + "\n",
		"mixed splats":     "x = a" + r("[*].b", n) + "\n",
		"commented splats": "x = [1]" + r("[/**/*]", n/2) + r("[*/**/]", n/2) + "\n",
		"index chains":     "x = a" + r("[a]", n) + "\n",
		"call indexes":     "x = f(1)" + r("[(0)]", n) + "\n",
	}
}

// TestDeepNestingIsADiagnostic loads files that nest 100,000 levels: each is a
// "Nesting too deep" diagnostic with the position of the first token past the
// limit, not a crash.
func TestDeepNestingIsADiagnostic(t *testing.T) {
	for name, src := range deepSources(100_000) {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "deep.hcl")
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			p, diags := load(t, path, plans.Options{})
			if p != nil || !diags.HasErrors() {
				t.Fatalf("loaded a file nested 100,000 deep: %v", diags)
			}
			d := diags[0]
			if len(diags) != 1 || d.Summary != "Nesting too deep" {
				t.Fatalf("want one \"Nesting too deep\" diagnostic, got %s", diags.Error())
			}
			if d.Subject == nil || d.Subject.Filename != path || d.Subject.Start.Line < 1 || d.Subject.Start.Column < 1 {
				t.Fatalf("diagnostic without a file:line:col: %+v", d.Subject)
			}
			if !strings.Contains(d.Detail, fmt.Sprint(plans.MaxNesting)) {
				t.Errorf("detail does not state the limit %d: %s", plans.MaxNesting, d.Detail)
			}
			// The position is where the limit was crossed, in this file's text.
			if got := string(src[d.Subject.Start.Byte:d.Subject.End.Byte]); got == "" {
				t.Errorf("subject %s covers no text", d.Subject)
			}
		})
	}
}

// TestNestingLimitPosition pins the position for the simplest case: with
// parentheses only, the first one past the limit is reported, on its line and
// column.
func TestNestingLimitPosition(t *testing.T) {
	src := "campaign \"c\" {}\n\nx = " + strings.Repeat("(", plans.MaxNesting+10) + "1" + strings.Repeat(")", plans.MaxNesting+10) + "\n"
	path := filepath.Join(t.TempDir(), "deep.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := load(t, path, plans.Options{})
	want := hcl.Pos{Line: 3, Column: len("x = ") + plans.MaxNesting + 1, Byte: len("campaign \"c\" {}\n\nx = ") + plans.MaxNesting}
	if len(diags) != 1 || diags[0].Subject == nil || diags[0].Subject.Start != want {
		t.Fatalf("want one diagnostic at %#v, got %s", want, diags.Error())
	}
}

// TestNestingWithinLimitLoads checks that the limit leaves room: a campaign whose
// step nests 100 parentheses, brackets and interpolations still loads.
func TestNestingWithinLimitLoads(t *testing.T) {
	n := 100
	src := `campaign "c" {}
step "exec" "e" {
  command = [` + strings.Repeat("(", n) + `"a"` + strings.Repeat(")", n) + `, ` + strings.Repeat(`"${`, n) + `"b"` + strings.Repeat(`}"`, n) + `, ` +
		strings.Repeat("[", n) + `"c"` + strings.Repeat("][0]", n) + `, "${1` + strings.Repeat(" + 1", n) + `}"]
}
`
	path := filepath.Join(t.TempDir(), "ok.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, path, plans.Options{})
	inst, _ := p.Instance("exec.e")
	got := inst.Config().GetAttr("command")
	if got.LengthInt() != 4 || got.Index(cty.NumberIntVal(0)).AsString() != "a" || got.Index(cty.NumberIntVal(3)).AsString() != fmt.Sprint(n+1) {
		t.Errorf("command = %#v", got)
	}
}

// TestDeepVariableValues puts the same limit on values from --var, var-files and
// the environment, which are parsed as HCL too.
func TestDeepVariableValues(t *testing.T) {
	campaign := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(campaign, []byte("campaign \"c\" {}\nvariable \"v\" {\n  type = list(any)\n  default = []\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	deep := strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)
	varFile := filepath.Join(t.TempDir(), "v.hcl")
	if err := os.WriteFile(varFile, []byte("v = "+deep+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]plans.Options{
		"flag":        {Vars: []string{"v=" + deep}},
		"environment": {Env: []string{plans.EnvPrefix + "v=" + deep}},
		"var-file":    {VarFiles: []string{varFile}},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			p, diags := load(t, campaign, opts)
			if p != nil || len(diags) != 1 || diags[0].Summary != "Nesting too deep" {
				t.Fatalf("want one \"Nesting too deep\" diagnostic, got %s", diags.Error())
			}
		})
	}
}

// TestDeepNestingInALargeFile hides 100,000 nested parentheses in the middle of a
// campaign large enough to be parsed in pieces: still a diagnostic, on its line.
func TestDeepNestingInALargeFile(t *testing.T) {
	lanes, _, _ := laneCampaign(t, 600_000)
	src, err := os.ReadFile(lanes)
	if err != nil {
		t.Fatal(err)
	}
	half := bytes.Index(src[len(src)/2:], []byte("\n# Lane")) + len(src)/2 + 1
	deep := "variable \"deep\" {\n  default = " + strings.Repeat("(", 100_000) + "1" + strings.Repeat(")", 100_000) + "\n}\n"
	big := string(src[:half]) + deep + string(src[half:])
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := load(t, path, plans.Options{})
	line := strings.Count(big[:half], "\n") + 2
	if len(diags) != 1 || diags[0].Summary != "Nesting too deep" || diags[0].Subject.Start.Line != line {
		t.Fatalf("want one \"Nesting too deep\" on line %d, got %s", line, diags.Error())
	}
}

// A restore bound that exceeds the reserve names the first always-steps and counts
// the rest: the diagnostic of a campaign with thousands of restores stays readable.
func TestRestoreBoundDiagnosticIsShort(t *testing.T) {
	var b strings.Builder
	b.WriteString("campaign \"c\" {\n  outage {\n    budget  = \"10h\"\n    reserve = \"1m\"\n  }\n}\n")
	for i := range 40 {
		fmt.Fprintf(&b, "step \"exec\" \"r%02d\" {\n  command = [\"true\"]\n  always  = true\n  timeout = \"10s\"\n}\n", i)
	}
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, diags := plans.Load(path, plans.Options{StepTypes: testStepTypes(), Env: []string{}})
	var got *hcl.Diagnostic
	for _, d := range diags {
		if d.Summary == "Restore bound exceeds the reserve" {
			got = d
		}
	}
	if got == nil {
		t.Fatalf("no restore-bound diagnostic: %v", diags)
	}
	if !strings.Contains(got.Detail, "6m40s together (exec.r00 10s, exec.r01 10s, exec.r02 10s, exec.r03 10s, exec.r04 10s, exec.r05 10s, and 34 more)") || strings.Contains(got.Detail, "exec.r06") {
		t.Fatalf("detail should list six and count the other 34: %s", got.Detail)
	}
}
