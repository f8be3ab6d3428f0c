package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
)

// TestCrashRecovery kills `rigor plan apply` with SIGKILL after N journal records,
// at ten points spread over the quickstart, then applies again. Every rerun must
// leave a verified journal whose first bytes are exactly the crashed run's journal,
// a succeeded restore, and no open outage.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the quickstart 20 times; skipped with -short")
	}
	bin, root := buildRigor(t)
	campaign := filepath.Join(root, "examples", "quickstart", "campaign.hcl")
	for i, killAt := range []int{2, 5, 8, 12, 17, 24, 31, 40, 52, 63} {
		t.Run(fmt.Sprintf("after_%d_records", killAt), func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "state")
			args := []string{"plan", "apply", campaign, "--state", state, "--log-format", "json",
				"--var", fmt.Sprintf("port=%d", 18700+i), "--var", "time_scale=0.002", "--var", "block_seconds=0.05"}
			journal := filepath.Join(state, engine.JournalFile)

			sandbox := simSandbox(t)
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), sandbox)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			killed := waitAndKill(t, cmd, journal, killAt)
			crashed, _ := os.ReadFile(journal)
			if !killed {
				t.Logf("apply finished before %d records; the rerun must say the campaign is closed", killAt)
			}

			rerun := exec.Command(bin, args...)
			rerun.Env = cmd.Env
			out, err := rerun.CombinedOutput()
			if code := rerun.ProcessState.ExitCode(); code != 0 && code != exitHeld {
				t.Fatalf("rerun exited %d (%v):\n%s", code, err, out)
			}
			after, err := os.ReadFile(journal)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(after, crashed) {
				t.Fatalf("the rerun rewrote records written before the kill")
			}
			problems, err := engine.Verify(state)
			if err != nil || len(problems) > 0 {
				t.Fatalf("verify after rerun: %v %v", err, problems)
			}
			st, err := engine.ReadStatus(state)
			if err != nil {
				t.Fatal(err)
			}
			if st.OutageOpen {
				t.Fatalf("outage still open after the rerun")
			}
			restored := false
			for _, s := range st.Steps {
				if s.Addr == "restore.incumbent" && s.Status == engine.StatusSucceeded {
					restored = true
				}
			}
			if !restored {
				t.Fatalf("restore.incumbent did not succeed; rerun output:\n%s", out)
			}
			if killed && len(after) <= len(crashed) {
				t.Fatalf("the rerun added no records")
			}
			// A kill inside a step or with the outage open must be recovered
			// explicitly: a recovery record, and the dead attempt ended as a crash.
			open := leftOpen(t, crashed)
			added := string(after[len(crashed):])
			if killed && open && !strings.Contains(added, `"kind":"recovery"`) {
				t.Fatalf("kill left work open but the rerun wrote no recovery record:\n%s", added)
			}
			if strings.Contains(added, `"kind":"recovery"`) {
				t.Logf("recovered: %d crashed attempt(s) closed", strings.Count(added, `"status":"interrupted"`))
			}
		})
	}
}

// waitAndKill SIGKILLs cmd once the journal holds n records. It reports false when
// the process ended by itself first.
func waitAndKill(t *testing.T, cmd *exec.Cmd, journal string, n int) bool {
	t.Helper()
	return waitAndKillWhen(t, cmd, journal, fmt.Sprintf("%d records", n), func(b []byte) bool { return bytes.Count(b, []byte("\n")) >= n })
}

// waitAndKillWhen SIGKILLs cmd once the journal's bytes satisfy when (described by
// what). It reports false when the process ended by itself first.
func waitAndKillWhen(t *testing.T, cmd *exec.Cmd, journal, what string, when func([]byte) bool) bool {
	t.Helper()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case <-done:
			return false
		case <-deadline:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("the journal never showed %s", what)
		default:
		}
		if b, err := os.ReadFile(journal); err == nil && when(b) {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-done
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// leftOpen reports whether a journal ends with an attempt or an outage still open.
func leftOpen(t *testing.T, journal []byte) bool {
	t.Helper()
	started, outage := map[string]bool{}, false
	for _, line := range strings.Split(strings.TrimSpace(string(journal)), "\n") {
		if line == "" {
			continue
		}
		var r engine.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("crashed journal line does not parse: %v", err)
		}
		key := fmt.Sprintf("%s#%d", r.Step, r.Attempt)
		switch r.Kind {
		case engine.KindStepStart:
			started[key] = true
		case engine.KindStepEnd:
			delete(started, key)
		case engine.KindOutageBegin:
			outage = true
		case engine.KindOutageEnd:
			outage = false
		}
	}
	return outage || len(started) > 0
}
