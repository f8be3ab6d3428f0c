package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestMakeBuildNamesCommit: a `make build` binary's --version names the checkout's
// commit even under GOFLAGS=-buildvcs=false, and in a git worktree, where go build
// alone stamps none.
func TestMakeBuildNamesCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds rigor with make")
	}
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	bin := t.TempDir()
	mk := exec.Command("make", "-C", root, "build", "BIN="+bin)
	mk.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
	if out, err := mk.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	dirty, err := exec.Command("git", "-C", root, "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command(filepath.Join(bin, "rigor"), "--version").Output()
	if err != nil {
		t.Fatalf("rigor --version: %v", err)
	}
	want := "rigor devel (" + string(head[:12])
	if len(dirty) > 0 {
		want += ", modified)\n"
	} else {
		want += ")\n"
	}
	if string(got) != want {
		t.Errorf("make build's rigor --version printed %q, want %q", got, want)
	}

	// In a git worktree of the same commit, with a change not committed: the commit,
	// and ", modified", whatever the checkout above was.
	wt := filepath.Join(t.TempDir(), "wt")
	if out, err := exec.Command("git", "-C", root, "worktree", "add", "--detach", wt, "HEAD").CombinedOutput(); err != nil {
		t.Fatalf("git worktree add: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("git", "-C", root, "worktree", "remove", "--force", wt).Run() })
	readme := filepath.Join(wt, "README.md")
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	// An untracked file alone marks the build modified, as a changed tracked file does.
	for _, change := range []struct {
		what string
		do   func() error
	}{
		{"an untracked file", func() error { return os.WriteFile(filepath.Join(wt, "untracked.txt"), []byte("x\n"), 0o644) }},
		{"an uncommitted change", func() error {
			if err := os.Remove(filepath.Join(wt, "untracked.txt")); err != nil {
				return err
			}
			return os.WriteFile(readme, append(b, "\nan uncommitted line\n"...), 0o644)
		}},
	} {
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		wbin := t.TempDir()
		mk = exec.Command("make", "-C", wt, "build", "BIN="+wbin)
		mk.Env = append(os.Environ(), "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -buildvcs=false"))
		if out, err := mk.CombinedOutput(); err != nil {
			t.Fatalf("make build in a worktree: %v\n%s", err, out)
		}
		got, err = exec.Command(filepath.Join(wbin, "rigor"), "--version").Output()
		if err != nil {
			t.Fatalf("rigor --version: %v", err)
		}
		if want := "rigor devel (" + string(head[:12]) + ", modified)\n"; string(got) != want {
			t.Errorf("in a worktree with %s, make build's rigor --version printed %q, want %q", change.what, got, want)
		}
	}
}
