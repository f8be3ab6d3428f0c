package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigor-bench/rigor/engine/atomicfile"
)

func TestWriteReplacesWholeAndKeepsThePermission(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.hcl")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("new content"), 0o640); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	st, _ := os.Stat(path)
	if string(b) != "new content" || st.Mode().Perm() != 0o640 {
		t.Errorf("content %q mode %v, want the new content with 0640", b, st.Mode().Perm())
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%d entries in the directory, want the file alone (no temporary left)", len(entries))
	}
}

// A write that cannot happen leaves the file as it was and no temporary beside it.
func TestFailedWriteLeavesTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.hcl")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A directory where the file should be renamed over cannot be replaced.
	blocked := filepath.Join(dir, "blocked")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(blocked, []byte("new"), 0o644); err == nil {
		t.Fatal("replacing a non-empty directory succeeded")
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), []byte("new"), 0o644); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d entries in the directory, want f.hcl and blocked (no temporary left)", len(entries))
	}
	if b, _ := os.ReadFile(path); string(b) != "old" {
		t.Errorf("the untouched file holds %q", b)
	}
}
