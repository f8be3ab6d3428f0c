package main

import (
	"fmt"
	"path/filepath"
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
