package plans_test

import (
	"flag"
	"runtime/debug"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// load calls plans.Load with the test step types and an empty environment. A panic
// fails the test with its stack instead of ending the whole test binary.
func load(t testing.TB, path string, opts plans.Options) (p *plans.Plan, diags hcl.Diagnostics) {
	t.Helper()
	if opts.StepTypes == nil {
		opts.StepTypes = testStepTypes()
	}
	if opts.Env == nil {
		opts.Env = []string{}
	}
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("Load(%s) panicked: %v\n%s", path, r, debug.Stack())
		}
	}()
	p, _, diags = plans.Load(path, opts)
	return p, diags
}

// mustLoad loads a campaign that must have no errors.
func mustLoad(t testing.TB, path string, opts plans.Options) *plans.Plan {
	t.Helper()
	p, diags := load(t, path, opts)
	if diags.HasErrors() || p == nil {
		t.Fatalf("Load(%s): %s", path, diags.Error())
	}
	return p
}

func mustHash(t testing.TB, p *plans.Plan) string {
	t.Helper()
	h, err := p.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func mustJSON(t testing.TB, p *plans.Plan) []byte {
	t.Helper()
	b, err := p.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errorsOf(diags hcl.Diagnostics) hcl.Diagnostics {
	var out hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			out = append(out, d)
		}
	}
	return out
}
