package plans_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

const varsCampaign = `campaign "vars" {
}

variable "x" {
  type    = string
  default = "default"
}

variable "n" {
  type    = number
  default = 1
}

variable "list" {
  type    = list(number)
  default = [1]
}

step "exec" "show" {
  command = [var.x, tostring(var.n), tostring(length(var.list))]
}
`

// writeFiles writes name -> content into a fresh directory and returns its path.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestVariablePrecedence: default < env RIGOR_VAR_x < --var-file (in order) < --var
// (in order).
func TestVariablePrecedence(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"c.hcl":       varsCampaign,
		"one.rvars":   "x = \"file-one\"\nn = 10\n",
		"two.rvars":   "x = \"file-two\"\n",
		"list.rvars":  "list = [1, 2, 3]\n",
		"empty.rvars": "",
	})
	campaign := filepath.Join(dir, "c.hcl")
	file := func(n string) string { return filepath.Join(dir, n) }
	type want struct {
		X, XSource string
		N          int64
		NSource    string
	}
	tests := map[string]struct {
		opts plans.Options
		want want
	}{
		"default": {
			opts: plans.Options{},
			want: want{"default", "default", 1, "default"},
		},
		"env over default": {
			opts: plans.Options{Env: []string{"RIGOR_VAR_x=env", "RIGOR_VAR_n=2", "PATH=/bin"}},
			want: want{"env", "env", 2, "env"},
		},
		"var-file over env": {
			opts: plans.Options{Env: []string{"RIGOR_VAR_x=env"}, VarFiles: []string{file("one.rvars")}},
			want: want{"file-one", "var-file", 10, "var-file"},
		},
		"later var-file wins": {
			opts: plans.Options{VarFiles: []string{file("one.rvars"), file("two.rvars")}},
			want: want{"file-two", "var-file", 10, "var-file"},
		},
		"empty var-file changes nothing": {
			opts: plans.Options{Env: []string{"RIGOR_VAR_n=3"}, VarFiles: []string{file("empty.rvars")}},
			want: want{"default", "default", 3, "env"},
		},
		"flag over var-file and env": {
			opts: plans.Options{Env: []string{"RIGOR_VAR_x=env"}, VarFiles: []string{file("one.rvars")}, Vars: []string{"x=flag"}},
			want: want{"flag", "flag", 10, "var-file"},
		},
		"later flag wins": {
			opts: plans.Options{Vars: []string{"x=first", "n=4", "x=second"}},
			want: want{"second", "flag", 4, "flag"},
		},
		"flag keeps text after the first =": {
			opts: plans.Options{Vars: []string{"x=a=b"}},
			want: want{"a=b", "flag", 1, "default"},
		},
		"env for other campaigns is ignored": {
			opts: plans.Options{Env: []string{"RIGOR_VAR_other=1", "RIGOR_VAR_X=upper"}},
			want: want{"default", "default", 1, "default"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := mustLoad(t, campaign, tc.opts)
			vars := map[string]*plans.Variable{}
			for _, v := range p.Variables {
				vars[v.Name] = v
			}
			x, n := vars["x"], vars["n"]
			got := want{X: x.Value.AsString(), XSource: x.Source, NSource: n.Source}
			got.N, _ = n.Value.AsBigFloat().Int64()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("variables (-want +got):\n%s", diff)
			}
			// The value reaches step configuration.
			inst, _ := p.Instance("exec.show")
			if cmd := inst.Config().GetAttr("command").Index(cty.NumberIntVal(0)).AsString(); cmd != tc.want.X {
				t.Errorf("command[0] = %q, want %q", cmd, tc.want.X)
			}
		})
	}
	t.Run("typed list from a flag and a file", func(t *testing.T) {
		for _, opts := range []plans.Options{{Vars: []string{"list=[1, 2, 3]"}}, {VarFiles: []string{file("list.rvars")}}} {
			p := mustLoad(t, campaign, opts)
			inst, _ := p.Instance("exec.show")
			if got := inst.Config().GetAttr("command").Index(cty.NumberIntVal(2)).AsString(); got != "3" {
				t.Errorf("%+v: length(var.list) = %s, want 3", opts, got)
			}
		}
	})
}

// TestBadVariableValues: problems with values given outside the campaign file.
func TestBadVariableValues(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"c.hcl":         varsCampaign,
		"typo.rvars":    "xx = \"1\"\n",
		"badtype.rvars": "n = \"many\"\n",
		"syntax.rvars":  "n = = 1\n",
	})
	campaign := filepath.Join(dir, "c.hcl")
	tests := map[string]struct {
		opts    plans.Options
		summary string
		detail  string
	}{
		"var without =":       {opts: plans.Options{Vars: []string{"x"}}, summary: "Invalid --var", detail: `--var "x" must have the form NAME=VALUE.`},
		"var undeclared":      {opts: plans.Options{Vars: []string{"nn=2"}}, summary: "Value for undeclared variable", detail: `Did you mean "n"?`},
		"var wrong type":      {opts: plans.Options{Vars: []string{"n=many"}}, summary: "Invalid value for variable", detail: `--var n: variable "n" is a number; "many" is not one`},
		"var not a list":      {opts: plans.Options{Vars: []string{`list="a"`}}, summary: "Invalid value for variable", detail: `--var list: variable "list" is a list(number)`},
		"env wrong type":      {opts: plans.Options{Env: []string{`RIGOR_VAR_n="x"`}}, summary: "Invalid value for variable", detail: "environment variable RIGOR_VAR_n"},
		"var-file missing":    {opts: plans.Options{VarFiles: []string{filepath.Join(dir, "nope.rvars")}}, summary: "Cannot read --var-file", detail: "nope.rvars"},
		"var-file undeclared": {opts: plans.Options{VarFiles: []string{filepath.Join(dir, "typo.rvars")}}, summary: "Value for undeclared variable", detail: `Did you mean "x"?`},
		"var-file wrong type": {opts: plans.Options{VarFiles: []string{filepath.Join(dir, "badtype.rvars")}}, summary: "Invalid value for variable", detail: `Variable "n" needs number`},
		"var-file syntax":     {opts: plans.Options{VarFiles: []string{filepath.Join(dir, "syntax.rvars")}}, summary: "Invalid expression", detail: ""},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, diags := load(t, campaign, tc.opts)
			errs := errorsOf(diags)
			if p != nil || len(errs) != 1 {
				t.Fatalf("Load = plan %v, errors %v; want no plan and one error", p != nil, diags)
			}
			if errs[0].Summary != tc.summary || !strings.Contains(errs[0].Detail, tc.detail) {
				t.Errorf("error = %q / %q, want %q containing %q", errs[0].Summary, errs[0].Detail, tc.summary, tc.detail)
			}
		})
	}
}
