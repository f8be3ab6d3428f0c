package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
)

// TestFreezeAfterAKilledFreeze: a freeze killed between writing plan/ and its
// plan_frozen record leaves files no record accounts for; the next apply freezes
// over them, and the state verifies.
func TestFreezeAfterAKilledFreeze(t *testing.T) {
	h := newHarness(t)
	if err := os.MkdirAll(filepath.Join(h.state, engine.PlanDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{engine.JournalFile, engine.PlanDir + "/frozen.hcl"} {
		if err := os.WriteFile(filepath.Join(h.state, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := h.apply(context.Background(), h.load(header+`step "probe" "a" {}`+"\n"))
	if err != nil || sum.Status != engine.EndCompleted {
		t.Fatalf("apply over a killed freeze: %+v %v", sum, err)
	}
	if b := mustRead(t, filepath.Join(h.state, engine.PlanDir, "frozen.hcl")); !strings.Contains(string(b), `step "probe" "a"`) {
		t.Fatalf("plan/frozen.hcl is %q", b)
	}
	if problems, err := engine.Verify(h.state); err != nil || len(problems) != 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
}
