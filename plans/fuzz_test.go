package plans_test

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
)

// FuzzLoad feeds arbitrary bytes to Load as a campaign file, with the real step
// registry (an external test package may import steps, which imports plans).
// Diagnostics are fine; a panic, a plan returned with errors, or a plan whose hash
// cannot be taken is not, and the streamed plan JSON must be encoding/json's.
// testdata/fuzz/FuzzLoad keeps inputs that once failed.
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../examples/*/campaign.hcl", "testdata/valid/*.hcl", "testdata/valid/*/*.hcl", "testdata/invalid/*.hcl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, m...)
	}
	if len(seeds) < 30 {
		f.Fatalf("only %d seed files", len(seeds))
	}
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	types := steps.Registry().Types()
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
		got, err := p.CanonicalJSON()
		if err != nil {
			t.Fatalf("plan JSON of a loaded plan: %v", err)
		}
		want, err := plans.CanonicalJSON(p.Canonical())
		if err != nil {
			t.Fatalf("encoding/json of a loaded plan: %v", err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("streamed plan JSON differs from encoding/json:\n%s\n%s", got, want)
		}
	})
}
