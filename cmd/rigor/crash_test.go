package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/report"
)

// crashRun is one quickstart killed with SIGKILL and applied again.
type crashRun struct {
	bin, campaign, state, journal string
	args                          []string
	env                           []string
}

// freePort returns a loopback port nothing listens on now: subtests run in
// parallel, and other test processes may hold fixed ports.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := unusedPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func newCrashRun(t *testing.T, bin, root string) *crashRun {
	t.Helper()
	state := filepath.Join(t.TempDir(), "state")
	campaign := filepath.Join(root, "examples", "quickstart", "campaign.hcl")
	port := freePort(t)
	return &crashRun{
		bin: bin, campaign: campaign, state: state, journal: filepath.Join(state, engine.JournalFile),
		args: []string{"plan", "apply", campaign, "--state", state, "--log-format", "json",
			"--var", fmt.Sprintf("port=%d", port), "--var", "time_scale=0.001", "--var", "block_seconds=0.02"},
		env: append(os.Environ(), simSandbox(t)),
	}
}

// killed starts apply and SIGKILLs it when the journal satisfies when; it returns
// the journal's bytes at the kill and whether the kill happened (false: the apply
// finished first).
func (c *crashRun) killed(t *testing.T, what string, when func([]byte) bool) ([]byte, bool) {
	t.Helper()
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env = c.env
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	k := waitAndKillWhen(t, cmd, c.journal, what, when)
	b, _ := os.ReadFile(c.journal)
	return b, k
}

// rerun applies again, to the end, and checks what every resume must give, whatever
// the moment of the kill:
//   - it exits 0 (completed) or 3 (held), never a failed restore or an error;
//   - a hold names the step the crash interrupted, and no step fails for a target
//     that rigor itself killed (the simulator's targets outlive rigor);
//   - the bytes written before the kill are a prefix of the journal;
//   - no outage is left open, the restore succeeded in this apply, and verify passes.
func (c *crashRun) rerun(t *testing.T, crashed []byte) (out string, added []engine.Record) {
	t.Helper()
	cmd := exec.Command(c.bin, c.args...)
	cmd.Env = c.env
	b, err := cmd.CombinedOutput()
	out = string(b)
	code := cmd.ProcessState.ExitCode()
	if bytes.Contains(crashed, []byte(`"kind":"campaign_end","prev":`)) && bytes.Contains(crashed, []byte(`"status":"completed"`)) {
		// The kill came after the campaign_end: the campaign is closed.
		if code != exitClosed {
			t.Fatalf("a campaign closed before the kill: rerun exited %d, want %d:\n%s", code, exitClosed, out)
		}
		return out, nil
	}
	if code != exitOK && code != exitHeld {
		t.Fatalf("rerun exited %d (%v):\n%s", code, err, out)
	}
	after, err := os.ReadFile(c.journal)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(after, crashed) {
		t.Fatal("the rerun rewrote records written before the kill")
	}
	for _, line := range strings.Split(strings.TrimSpace(string(after[len(crashed):])), "\n") {
		var r engine.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("journal line %q: %v", line, err)
		}
		added = append(added, r)
	}
	// The restore succeeded after the last outage began: in this apply, or in the
	// dead one just before the kill (the resume then closes the outage from it).
	restored := false
	all, _, _ := engine.ReadJournal(c.journal)
	for _, r := range all {
		switch {
		case r.Kind == engine.KindOutageBegin:
			restored = false
		case r.Kind == engine.KindStepEnd && r.Step == "restore.incumbent" && r.Status == engine.StatusSucceeded:
			restored = true
		}
	}
	for _, r := range added {
		if r.Kind == engine.KindStepEnd && r.Status == engine.StatusFailed {
			t.Fatalf("the resume failed %s (%s): %s\n%s", r.Step, r.Class, r.Message, out)
		}
		if r.Kind == engine.KindRefresh && r.Status != engine.StatusSucceeded {
			t.Fatalf("a target rigor left running was not found as the journal recorded it: %s\n%s", r.Message, out)
		}
	}
	if !restored {
		t.Fatalf("restore.incumbent has no succeeded attempt since the outage began:\n%s", out)
	}
	if code == exitHeld && !strings.Contains(out, "was interrupted when the previous apply died") {
		t.Fatalf("a held resume must name the interrupted step:\n%s", out)
	}
	if problems, err := engine.Verify(c.state); err != nil || len(problems) > 0 {
		t.Fatalf("verify after the resume: %v %v", err, problems)
	}
	st, err := engine.ReadStatus(c.state)
	if err != nil {
		t.Fatal(err)
	}
	if st.OutageOpen {
		t.Fatal("outage still open after the resume")
	}
	return out, added
}

// TestCrashAtEveryRecord SIGKILLs `plan apply` of the quickstart right after each
// journal record it writes, every one of them, then applies again (issue 8).
func TestCrashAtEveryRecord(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quickstart about 70 times; skipped with -short")
	}
	bin, root := buildRigor(t)
	// Count the records of an uninterrupted run.
	ref := newCrashRun(t, bin, root)
	cmd := exec.Command(ref.bin, ref.args...)
	cmd.Env = ref.env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	full, _ := os.ReadFile(ref.journal)
	n := bytes.Count(full, []byte("\n"))
	if n < 60 {
		t.Fatalf("the quickstart wrote %d records; expected about 69", n)
	}
	for k := 1; k < n; k++ {
		t.Run(fmt.Sprintf("after_record_%02d", k), func(t *testing.T) {
			t.Parallel()
			c := newCrashRun(t, bin, root)
			crashed, ok := c.killed(t, fmt.Sprintf("%d records", k), func(b []byte) bool { return bytes.Count(b, []byte("\n")) >= k })
			if !ok {
				t.Skipf("the apply finished before record %d (a run can write fewer records than the reference)", k)
			}
			c.rerun(t, crashed)
		})
	}
}

// TestCrashAtRandomMoments kills the quickstart at 20 random moments (seeded, so a
// failure can be replayed) and checks, besides what every resume must give, that
// every request record written before the kill is in the report's population
// (issue 9): a crashed attempt stays in its cell, its unfinished requests count as
// failures, and nothing was re-sent in its place.
func TestCrashAtRandomMoments(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the quickstart 20 times; skipped with -short")
	}
	bin, root := buildRigor(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for i := 0; i < 20; i++ {
		delay := time.Duration(100+rng.IntN(1700)) * time.Millisecond
		t.Run(fmt.Sprintf("kill_%02d_after_%s", i, delay), func(t *testing.T) {
			t.Parallel()
			c := newCrashRun(t, bin, root)
			start := time.Now()
			crashed, ok := c.killed(t, "the moment", func([]byte) bool { return time.Since(start) >= delay })
			if !ok {
				t.Skip("the apply finished before the moment")
			}
			before := requestRecords(t, c.state)
			out, _ := c.rerun(t, crashed)
			dir := filepath.Join(t.TempDir(), "report")
			if _, err := report.Generate(report.Options{State: c.state, Out: dir, Format: "md"}); err != nil {
				t.Fatalf("report: %v", err)
			}
			population := reportPopulation(t, filepath.Join(dir, "summary.json"))
			for key, n := range before {
				got, ok := population[key]
				if !ok {
					t.Fatalf("%s (%d records before the kill) is missing from the report's population:\n%s", key, n, out)
				}
				if got < n {
					t.Fatalf("%s: %d records before the kill, the report counts %d attempted", key, n, got)
				}
			}
		})
	}
}

// requestRecords counts the request records of every matrix block attempt in a
// state directory, by "step#attempt".
func requestRecords(t *testing.T, state string) map[string]int {
	t.Helper()
	recs, _, _ := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	out := map[string]int{}
	for _, r := range recs {
		if r.Kind != engine.KindStepStart || !strings.HasPrefix(r.Step, "block.primary[") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(state, filepath.FromSlash(r.Dir), "requests.jsonl"))
		if err != nil || len(b) == 0 {
			continue
		}
		out[fmt.Sprintf("%s#%d", r.Step, r.Attempt)] = bytes.Count(b, []byte("\n"))
	}
	return out
}

// reportPopulation reads summary.json: the attempted count of every block attempt
// the report's cells hold, by "step#attempt".
func reportPopulation(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Rows []struct {
			Blocks []struct {
				Step      string `json:"step"`
				Attempt   int    `json:"attempt"`
				Attempted int    `json:"attempted"`
			} `json:"blocks"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range s.Rows {
		for _, bl := range r.Blocks {
			out[fmt.Sprintf("%s#%d", bl.Step, bl.Attempt)] = bl.Attempted
		}
	}
	return out
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
