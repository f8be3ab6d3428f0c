package plans_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
)

// invalidWant is what a file in testdata/invalid declares in its header:
//
//	# want: "Summary" line N [col C]
//	# detail: a substring of that diagnostic's detail (any number of these)
//	# types: steps (load with the built-in step types instead of the test ones)
//
// With col, the diagnostic must start at that column too: a value's problem is
// reported at the value (or the key inside it), not at the attribute or block.
type invalidWant struct {
	Summary string
	Line    int
	Col     int
	Details []string
	// Real: the problem is one a built-in step type's own schema refuses (its
	// enumerations live in the step's packages, which this package's test step
	// types cannot import).
	Real bool
}

var wantRE = regexp.MustCompile(`^# want: ("(?:[^"\\]|\\.)*") line (\d+)(?: col (\d+))?$`)

func readWant(t *testing.T, path string) invalidWant {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var w invalidWant
	sc := bufio.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		line := sc.Text()
		if m := wantRE.FindStringSubmatch(line); m != nil {
			w.Summary, err = strconv.Unquote(m[1])
			if err != nil {
				t.Fatalf("%s: bad want header: %v", path, err)
			}
			w.Line, _ = strconv.Atoi(m[2])
			if m[3] != "" {
				w.Col, _ = strconv.Atoi(m[3])
			}
		} else if d, ok := strings.CutPrefix(line, "# detail: "); ok {
			w.Details = append(w.Details, d)
		} else if line == "# types: steps" {
			w.Real = true
		}
	}
	if w.Summary == "" {
		t.Fatalf("%s has no `# want: \"Summary\" line N` header", path)
	}
	return w
}

// TestInvalidCampaigns loads every file in testdata/invalid. Each holds exactly one
// problem: the first error must be the one its header names, at the line it names,
// and no other kind of error may follow from it.
func TestInvalidCampaigns(t *testing.T) {
	files, err := filepath.Glob("testdata/invalid/*.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 25 {
		t.Fatalf("want at least 25 invalid campaigns, found %d", len(files))
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".hcl")
		t.Run(name, func(t *testing.T) {
			want := readWant(t, path)
			var opts plans.Options
			if want.Real {
				opts.StepTypes = steps.Registry().Types()
			}
			p, diags := load(t, path, opts)
			errs := errorsOf(diags)
			if p != nil || len(errs) == 0 {
				t.Fatalf("Load(%s) = plan %v, %d errors; want no plan and an error", path, p != nil, len(errs))
			}
			first := errs[0]
			got := invalidWant{Summary: first.Summary}
			if first.Subject != nil {
				got.Line = first.Subject.Start.Line
				if want.Col != 0 {
					got.Col = first.Subject.Start.Column
				}
			}
			got.Details, got.Real = want.Details, want.Real
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("first error (-want +got):\n%s\nall diagnostics:\n%s", diff, diags.Error())
			}
			for _, d := range want.Details {
				if !strings.Contains(first.Detail, d) {
					t.Errorf("detail %q does not contain %q", first.Detail, d)
				}
			}
			for _, e := range errs {
				if e.Subject == nil || e.Subject.Filename != path {
					t.Errorf("diagnostic %q has subject %v; want a range in %s", e.Summary, e.Subject, path)
				}
				if e.Summary != want.Summary {
					t.Errorf("one problem produced a second kind of error: %s", e.Error())
				}
			}
		})
	}
}

// TestAllErrorsAtOnce checks that loading does not stop at the first problem.
func TestAllErrorsAtOnce(t *testing.T) {
	tests := map[string]struct {
		src  string
		want []string // "Summary@line", in order
	}{
		"block decoding": {
			src: `campaign "c" {
}
step "blokc" "a" {
}
target "t" {
  endpoint = "http://x"
  imgae    = "y"
}
workload "w" {
  max_token = 1
}
`,
			want: []string{"Unknown step type@3", "Unsupported argument@7", "Unsupported argument@10"},
		},
		"references": {
			src: `campaign "c" {
}
target "t" {
  endpoint = var.missing
}
step "deploy" "a" {
  target = target.tt
}
step "exec" "b" {
  command = [step.exec.c.exit_code]
}
`,
			want: []string{"Reference to undeclared target@7", "Reference to undeclared step@10", "Reference to undeclared variable@4"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.hcl")
			if err := os.WriteFile(path, []byte(tc.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := load(t, path, plans.Options{})
			if diff := cmp.Diff(tc.want, summaries(diags)); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
		})
	}
}

func summaries(diags hcl.Diagnostics) []string {
	var out []string
	for _, d := range errorsOf(diags) {
		line := 0
		if d.Subject != nil {
			line = d.Subject.Start.Line
		}
		out = append(out, d.Summary+"@"+strconv.Itoa(line))
	}
	return out
}
