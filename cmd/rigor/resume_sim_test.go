package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps"
)

// TestResumeFindsTheSimTargetsAlive kills `plan apply` of the quickstart with SIGKILL
// while a pilot block runs (no outage open yet) and applies again. The incumbent's
// server survived the kill, as a container would: the resumed campaign finds the
// same incarnation, its next blocks pass their gates (none fails for health), and
// the campaign runs to its end.
func TestResumeFindsTheSimTargetsAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the quickstart twice; skipped with -short")
	}
	bin, root := buildRigor(t)
	sandbox := simSandbox(t)
	state := filepath.Join(t.TempDir(), "state")
	args := []string{"plan", "apply", filepath.Join(root, "examples", "quickstart", "campaign.hcl"), "--state", state,
		"--var", "port=18694", "--var", "time_scale=0.004", "--var", "block_seconds=0.2"}
	journal := filepath.Join(state, engine.JournalFile)

	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), sandbox)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c4 := []byte(`"step":"block.pilot[\"c4\"]"`)
	if !waitAndKillWhen(t, cmd, journal, "the pilot's second block", func(b []byte) bool { return bytes.Contains(b, c4) }) {
		t.Fatal("apply ended before the pilot's second block started")
	}
	crashed, _ := os.ReadFile(journal)
	list, err := steps.SimContainers(filepath.Join(strings.TrimPrefix(sandbox, "XDG_RUNTIME_DIR="), "rigor", "sim"))
	if err != nil || len(list) != 1 || list[0].Status != "running" {
		t.Fatalf("after the kill, the sim targets: %+v %v; want the incumbent running", list, err)
	}
	survivor := list[0]

	rerun := exec.Command(bin, args...)
	rerun.Env = cmd.Env
	out, err := rerun.CombinedOutput()
	if code := rerun.ProcessState.ExitCode(); code != 0 && code != exitHeld {
		t.Fatalf("rerun exited %d (%v):\n%s", code, err, out)
	}
	after, _ := os.ReadFile(journal)
	if !bytes.HasPrefix(after, crashed) {
		t.Fatal("the rerun rewrote records written before the kill")
	}
	var blocksOK int
	var firstStart *engine.Record
	for _, line := range bytes.Split(bytes.TrimSpace(after[len(crashed):]), []byte("\n")) {
		var r engine.Record
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == engine.KindStepStart && strings.HasPrefix(r.Step, "block.") && firstStart == nil {
			firstStart = &r
		}
		if r.Kind != engine.KindStepEnd {
			continue
		}
		if r.Class == engine.ClassHealth || r.Class == engine.ClassIdentity {
			t.Errorf("after the resume %s failed (%s): %s", r.Step, r.Class, r.Message)
		}
		if strings.HasPrefix(r.Step, "block.") && r.Status == engine.StatusSucceeded {
			blocksOK++
		}
	}
	if blocksOK < 10 {
		t.Errorf("only %d blocks succeeded after the resume:\n%s", blocksOK, out)
	}
	if !strings.Contains(string(out), "campaign quickstart: completed") {
		t.Errorf("the resumed campaign did not complete:\n%s", out)
	}
	// The first block after the resume measured the very server that survived.
	st, err := engine.ReadStatus(state)
	if err != nil {
		t.Fatal(err)
	}
	if st.OutageOpen {
		t.Error("outage left open")
	}
	if firstStart == nil {
		t.Fatal("no block started after the resume")
	}
	inc := blockIncarnation(t, state, firstStart.Step)
	if inc != survivor.Incarnation {
		t.Errorf("%s after the resume measured incarnation %q, the survivor is %q", firstStart.Step, inc, survivor.Incarnation)
	}
}

// blockIncarnation is the incarnation a block's last attempt recorded in its outputs.
func blockIncarnation(t *testing.T, state, addr string) string {
	t.Helper()
	recs, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if r := recs[i]; r.Kind == engine.KindStepEnd && r.Step == addr {
			var o struct {
				Incarnation string `json:"incarnation"`
			}
			if err := json.Unmarshal(r.Outputs, &o); err != nil {
				t.Fatalf("%s outputs: %v", addr, err)
			}
			return o.Incarnation
		}
	}
	t.Fatalf("no end record for %s", addr)
	return ""
}
