package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestExampleGoldens pins `plan show` and the canonical plan JSON of every example:
// a change to either is a change to what a frozen plan means, and must be seen.
func TestExampleGoldens(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*", "campaign.hcl"))
	if len(examples) == 0 {
		t.Fatal("no examples found")
	}
	for _, ex := range examples {
		name := filepath.Base(filepath.Dir(ex))
		for _, c := range []struct {
			suffix string
			args   []string
		}{
			{".show.txt", []string{"plan", "show", ex}},
			{".plan.json", []string{"plan", "show", "--json", ex}},
		} {
			t.Run(name+c.suffix, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := run(c.args, &stdout, &stderr); code != 0 {
					t.Fatalf("exit %d: %s", code, stderr.String())
				}
				golden := filepath.Join("testdata", "golden", name+c.suffix)
				if *update {
					if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
					t.Errorf("%s changed (-golden +now); rerun with -update if intended:\n%s", golden, diff)
				}
			})
		}
	}
}
