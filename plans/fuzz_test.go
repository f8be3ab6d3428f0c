package plans_test

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

// FuzzLoad feeds arbitrary bytes to Load as a campaign file. Diagnostics are fine;
// a panic is not. testdata/fuzz/FuzzLoad keeps inputs that once panicked.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"testdata/valid/*.hcl", "testdata/valid/*/*.hcl", "testdata/invalid/*.hcl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) == 0 {
		f.Fatal("no seed files in testdata")
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	types := testStepTypes()
	f.Fuzz(func(t *testing.T, src []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "c.hcl")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Load panicked: %v\n%s", r, debug.Stack())
			}
		}()
		p, _, diags := plans.Load(path, plans.Options{StepTypes: types, Env: []string{}})
		if diags.HasErrors() {
			if p != nil {
				t.Fatalf("Load returned a plan along with errors: %s", diags.Error())
			}
			return
		}
		if p == nil {
			t.Fatal("Load returned neither a plan nor an error")
		}
		if _, err := p.Hash(); err != nil {
			t.Fatalf("Hash of a loaded plan: %v", err)
		}
	})
}
