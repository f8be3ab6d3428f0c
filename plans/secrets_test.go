package plans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/zclconf/go-cty/cty"
)

// secretsHeader declares a sensitive API key (set through the environment in the
// tests), a sensitive map and a target that carries the key.
const secretsHeader = `campaign "secrets" {}
variable "api_key" {
  sensitive = true
}
variable "tokens" {
  type      = map(string)
  sensitive = true
  default   = { a = "tok-a" }
}
host "h" { runtime = "sim" }
target "t" {
  host     = host.h
  endpoint = "http://127.0.0.1:1"
  api_key  = var.api_key
  labels   = {}
}
workload "w" {}
`

func loadSecrets(t *testing.T, body string, env ...string) (*plans.Plan, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(secretsHeader+body), 0o644); err != nil {
		t.Fatal(err)
	}
	if env == nil {
		env = []string{plans.EnvPrefix + "api_key=sk-test-42"}
	}
	p, diags := load(t, path, plans.Options{StepTypes: steps.Registry().Types(), Env: env})
	var got []string
	for _, d := range errorsOf(diags) {
		s := d.Summary
		if d.Subject != nil {
			r := *d.Subject
			r.Filename = filepath.Base(r.Filename)
			s = r.String() + ": " + s
		}
		got = append(got, s)
	}
	return p, got
}

// TestSensitiveValueInPublicArgument refuses a sensitive value wherever others can
// read it, directly or derived, at the range of the reference that brings it in.
func TestSensitiveValueInPublicArgument(t *testing.T) {
	const refused = "Sensitive value in a public argument"
	cases := map[string]struct {
		body string
		at   string // the text the diagnostic must point at, on the second line of body
		env  []string
	}{
		"exec command": {
			body: "step \"exec\" \"e\" {\n  command = [\"curl\", \"-H\", var.api_key]\n}\n",
			at:   `var.api_key`,
		},
		"template in exec command": {
			body: "step \"exec\" \"e\" {\n  command = [\"curl\", \"-H\", \"Authorization: Bearer ${var.api_key}\"]\n}\n",
			at:   `var.api_key`,
		},
		"function of a sensitive value": {
			body: "step \"exec\" \"e\" {\n  command = [\"echo\", upper(var.api_key)]\n}\n",
			at:   `var.api_key`,
		},
		"through a target attribute": {
			body: "step \"exec\" \"e\" {\n  command = [\"echo\", target.t.api_key]\n}\n",
			at:   `target.t.api_key`,
		},
		"empty sensitive value": {
			body: "step \"exec\" \"e\" {\n  command = [\"echo\", var.api_key]\n}\n",
			env:  []string{plans.EnvPrefix + "api_key="},
			at:   `var.api_key`,
		},
		"for_each value": {
			body: "step \"exec\" \"e\" {\n  command  = [\"echo\", each.value]\n  for_each = { a = var.api_key }\n}\n",
			at:   `["echo", each.value]`,
		},
		"nsys command": {
			body: "step \"nsys\" \"n\" {\n  command  = [\"python3\", \"bench.py\", var.api_key]\n  duration = \"2s\"\n}\n",
			at:   `var.api_key`,
		},
		"build args": {
			body: "step \"build\" \"b\" {\n  build_args = { KEY = var.api_key }\n  host       = host.h\n  context    = \".\"\n}\n",
			at:   `var.api_key`,
		},
		"image labels": {
			body: "step \"build\" \"b\" {\n  labels  = { owner = var.api_key }\n  host    = host.h\n  context = \".\"\n}\n",
			at:   `var.api_key`,
		},
		"image tags": {
			body: "step \"build\" \"b\" {\n  tags    = [\"reg/${var.api_key}\"]\n  host    = host.h\n  context = \".\"\n}\n",
			at:   `var.api_key`,
		},
		"restore preflight": {
			body: "step \"restore\" \"r\" {\n  preflight = [[\"curl\", var.api_key]]\n  target    = target.t\n}\n",
			at:   `var.api_key`,
		},
		"env is the way in": {
			body: "step \"exec\" \"e\" {\n  command = [\"sh\", \"-c\", \"curl -H \\\"Authorization: Bearer $API_KEY\\\" $URL\"]\n  env     = { API_KEY = var.api_key, URL = target.t.endpoint }\n}\n",
		},
		"a target carrying a key into a block": {
			body: "step \"block\" \"b\" {\n  target      = target.t\n  workload    = workload.w\n  concurrency = 1\n  requests    = 1\n}\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, got := loadSecrets(t, tc.body, tc.env...)
			var want []string
			if tc.at != "" {
				want = []string{rangeOf(t, tc.body, 2, tc.at) + ": " + refused}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// rangeOf is "c.hcl:LINE,COL-COL" of text on line n of body, in the campaign file.
func rangeOf(t *testing.T, body string, n int, text string) string {
	t.Helper()
	line := strings.Split(body, "\n")[n-1]
	col := strings.Index(line, text)
	if col < 0 {
		t.Fatalf("%q is not on line %d of the body", text, n)
	}
	headerLines := strings.Count(secretsHeader, "\n")
	return fmt.Sprintf("c.hcl:%d,%d-%d", headerLines+n, col+1, col+1+len(text))
}

// TestSensitiveDiagnosticSaysWhatToDo checks the words of the refusal for a
// command: what is sensitive, why the argument is public, and to use env.
func TestSensitiveDiagnosticSaysWhatToDo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hcl")
	body := "step \"exec\" \"e\" {\n  command = [\"curl\", \"-H\", var.api_key]\n}\n"
	if err := os.WriteFile(path, []byte(secretsHeader+body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := load(t, path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{plans.EnvPrefix + "api_key=k"}})
	if len(diags) != 1 {
		t.Fatalf("want one diagnostic, got %s", diags.Error())
	}
	for _, want := range []string{"command of step exec.e is built from var.api_key, which is sensitive.", "visible to every user of the host", "through env instead", "env = { API_KEY = var.api_key }"} {
		if !strings.Contains(diags[0].Detail, want) {
			t.Errorf("detail lacks %q: %s", want, diags[0].Detail)
		}
	}
}

// TestSensitiveTargetArguments refuses a secret in a target's preflight (command
// lines the restore runs), its container command and its labels.
func TestSensitiveTargetArguments(t *testing.T) {
	for _, line := range []string{
		`  preflight = [["curl", "-u", var.api_key]]`,
		`  command   = ["serve", "--key", var.api_key]`,
		`  labels    = { key = var.api_key }`,
	} {
		t.Run(strings.Fields(line)[0], func(t *testing.T) {
			body := "target \"u\" {\n" + line + "\n  endpoint  = \"http://127.0.0.1:2\"\n}\n"
			_, got := loadSecrets(t, body)
			if diff := cmp.Diff([]string{rangeOf(t, body, 2, "var.api_key") + ": Sensitive value in a public argument"}, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSensitiveForEachKeys refuses sensitive instance keys: they name instances in
// addresses, logs and evidence.
func TestSensitiveForEachKeys(t *testing.T) {
	body := "step \"exec\" \"e\" {\n  for_each = [var.api_key]\n  command  = [\"true\"]\n}\n"
	_, got := loadSecrets(t, body)
	if diff := cmp.Diff([]string{rangeOf(t, body, 2, "[var.api_key]") + ": Invalid for_each argument"}, got); diff != "" {
		t.Errorf("diagnostics (-want +got):\n%s", diff)
	}
}

// TestPlanSecrets lists the strings of every sensitive variable, and nothing from
// variables that are not sensitive.
func TestPlanSecrets(t *testing.T) {
	p, diags := loadSecrets(t, "variable \"plain\" {\n  default = \"not-secret\"\n}\n")
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if diff := cmp.Diff([]string{"a", "sk-test-42", "tok-a"}, p.Secrets()); diff != "" {
		t.Errorf("Secrets (-want +got):\n%s", diff)
	}
}

// TestSensitiveStrings walks nested values: marked leaves, everything under a
// marked container, never numbers, bools or empty strings.
func TestSensitiveStrings(t *testing.T) {
	s := func(v string) cty.Value { return cty.StringVal(v) }
	cases := map[string]struct {
		v    cty.Value
		want []string
	}{
		"marked string":         {s("k").Mark(plans.Sensitive), []string{"k"}},
		"plain string":          {s("k"), []string{}},
		"marked object":         {cty.ObjectVal(map[string]cty.Value{"a": s("x"), "n": cty.NumberIntVal(7), "b": cty.True}).Mark(plans.Sensitive), []string{"x"}},
		"marked leaf in a list": {cty.TupleVal([]cty.Value{s("open"), s("hidden").Mark(plans.Sensitive)}), []string{"hidden"}},
		"marked map keys":       {cty.MapVal(map[string]cty.Value{"key-name": s("v")}).Mark(plans.Sensitive), []string{"key-name", "v"}},
		"empty and unknown":     {cty.TupleVal([]cty.Value{s("").Mark(plans.Sensitive), cty.UnknownVal(cty.String).Mark(plans.Sensitive)}), []string{}},
		"nil":                   {cty.NilVal, []string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, plans.SensitiveStrings(tc.v)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
