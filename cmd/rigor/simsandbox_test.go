package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rigor-bench/rigor/steps"
)

// simSandbox gives the rigor processes a test runs a sim runtime root of their own
// (through XDG_RUNTIME_DIR, which the default root follows) and stops every server
// they left running when the test ends: sim targets outlive the apply that started
// them, by design, and must not outlive the test.
func simSandbox(t *testing.T) (env string) {
	t.Helper()
	run := t.TempDir()
	t.Cleanup(func() {
		if err := stopSims(run); err != nil {
			t.Error(err)
		}
	})
	return "XDG_RUNTIME_DIR=" + run
}

// stopSims stops every simulator server under the runtime directory run.
func stopSims(run string) error {
	if _, err := steps.StopSimContainers(filepath.Join(run, "rigor", "sim"), nil); err != nil {
		return fmt.Errorf("stop the simulator servers the test left: %w", err)
	}
	return nil
}

// buildRigor builds the rigor binary for tests that run it as a process (and kill
// it), and returns it with the repository root.
func buildRigor(t *testing.T) (bin, root string) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	bin = filepath.Join(t.TempDir(), "rigor")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Dir(file)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	return bin, filepath.Join(filepath.Dir(file), "..", "..")
}
