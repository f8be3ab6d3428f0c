package plans_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

// TestMatrixErrorReportedOnce: a mistake in a matrix attribute is one problem in
// the file, so it is one diagnostic, however many instances the matrix expands to.
func TestMatrixErrorReportedOnce(t *testing.T) {
	const src = `campaign "c" {
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
matrix "m" {
  workload    = workload.w
  concurrency = [1, 4]
  repetitions = 3
  priming     = true
  requests    = { c1 = 52 }
  arm "a" {
    target = target.t
  }
  arm "b" {
    target = target.t
  }
}
workload "w" {}
`
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := load(t, path, plans.Options{})
	errs := errorsOf(diags)
	if len(errs) == 0 || errs[0].Summary != "Missing request count" || errs[0].Subject.Start.Line != 11 {
		t.Fatalf("want Missing request count at line 11, got %v", diags)
	}
	if len(errs) != 1 {
		t.Fatalf("a matrix attribute error was reported %d times; one mistake must be reported once", len(errs))
	}
}
