package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
)

const header = `
campaign "t" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
`

func TestDeclarationOrderIsRunOrder(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "a" {}
step "probe" "d" { value = step.probe.c.value }
step "probe" "b" {}
step "probe" "c" {}
`)
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "completed" {
		t.Fatalf("status %q (%s)", sum.Status, sum.Reason)
	}
	// d waits for c; otherwise declaration order holds.
	want := []string{"probe.a", "probe.b", "probe.c", "probe.d"}
	if diff := cmp.Diff(want, h.probe.ran()); diff != "" {
		t.Fatalf("run order (-want +got):\n%s", diff)
	}
	if got := h.finals()["probe.d"].Outputs; !strings.Contains(string(got), `"probe.c"`) {
		t.Fatalf("d did not receive c's output: %s", got)
	}
}

func TestUsesExclusivity(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "gpu1" { 
  uses = ["gpu"]
  sleep = "60ms"
}
step "probe" "gpu2" { 
  uses = ["gpu"]
  sleep = "60ms"
}
step "probe" "build" { 
  uses = ["cpu"]
  sleep = "60ms"
}
`)
	if _, err := h.apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if h.probe.overlap["gpu"] {
		t.Fatal("two steps using gpu ran at the same time")
	}
	// The build declares a different resource, so it ran beside the first GPU step
	// instead of waiting for both: it started second, not third.
	order := h.probe.ran()
	if len(order) != 3 || order[1] != "probe.build" {
		t.Fatalf("build should start beside gpu1, got order %v", order)
	}
}

func TestStopClassRunsOnlyAlwaysSteps(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "first" {}
step "probe" "identity" { fail = "identity" }
step "probe" "later" {}
step "probe" "dependent" { value = step.probe.later.value }
step "probe" "restore" { always = true }
`)
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseStopped {
		t.Fatalf("status %q cause %q, want held after a stop", sum.Status, sum.Cause)
	}
	want := []string{"probe.first", "probe.identity", "probe.restore"}
	if diff := cmp.Diff(want, h.probe.ran()); diff != "" {
		t.Fatalf("ran (-want +got):\n%s", diff)
	}
	f := h.finals()
	for _, addr := range []string{"probe.later", "probe.dependent"} {
		if f[addr].Status != engine.StatusBlocked || f[addr].Class != engine.ClassIdentity {
			t.Errorf("%s: status %s class %s, want blocked by identity", addr, f[addr].Status, f[addr].Class)
		}
		if !strings.Contains(f[addr].BlockedBy, "probe.identity") {
			t.Errorf("%s: blocked_by %q does not name the failed step", addr, f[addr].BlockedBy)
		}
	}
	if f["probe.identity"].Policy != engine.PolicyStopCampaign {
		t.Errorf("identity policy %s", f["probe.identity"].Policy)
	}
}

func TestRecordClassFailureContinues(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "cell" { fail = "record" }
step "probe" "next" {}
`)
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != "completed" || len(h.probe.ran()) != 2 {
		t.Fatalf("status %s ran %v; a record-class failure must not stop the campaign", sum.Status, h.probe.ran())
	}
}

func TestOutageDeferralWithFakeClock(t *testing.T) {
	h := newHarness(t)
	// 90m budget, 20m reserve: 70m usable. deploy opens it and takes 50m; block1
	// (bound 15m) fits in the 20m left, block2 (bound 15m) does not after block1's
	// 10m, so it is deferred; block3 (bound 1m) still fits.
	p := h.load(header + `
step "probe" "deploy" {
  outage  = "begin"
  timeout = "60m"
  advance = "50m"
}
step "probe" "block1" {
  timeout = "15m"
  advance = "10m"
}
step "probe" "block2" { timeout = "15m" }
step "probe" "block3" { timeout = "1m" }
step "probe" "restore" {
  always  = true
  outage  = "end"
  timeout = "20m"
  advance = "5m"
}
`)
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseDeferred {
		t.Fatalf("status %q cause %q, want held for a deferral (%s)", sum.Status, sum.Cause, sum.Reason)
	}
	f := h.finals()
	if f["probe.block2"].Status != engine.StatusDeferred || f["probe.block2"].Class != engine.ClassOutageBudget {
		t.Fatalf("block2: %+v", f["probe.block2"])
	}
	// A deferral skips only what depends on it: block3 fits in what is left and
	// does not depend on block2, so it runs.
	if f["probe.block3"].Status != engine.StatusSucceeded {
		t.Fatalf("block3 fits and does not depend on block2: want succeeded, got %s", f["probe.block3"].Status)
	}
	if f["probe.restore"].Status != engine.StatusSucceeded {
		t.Fatalf("restore: %s", f["probe.restore"].Status)
	}
	var end *engine.Record
	for _, r := range h.records() {
		if r.Kind == engine.KindOutageEnd {
			r := r
			end = &r
		}
	}
	if end == nil || end.ElapsedS != (65*time.Minute).Seconds() {
		t.Fatalf("outage end record %+v, want 65m elapsed", end)
	}
}

func TestInterruptRunsRestore(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "block" { hang = true }
step "probe" "after" {}
step "probe" "restore" {
  always = true
  outage = "end"
}
`)
	ctx := h.interruptWhen("probe.block", "SIGINT")
	sum, err := h.apply(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseInterrupted {
		t.Fatalf("status %q cause %q, want held after an interrupt", sum.Status, sum.Cause)
	}
	f := h.finals()
	if f["probe.block"].Status != engine.StatusInterrupted {
		t.Errorf("block: %s", f["probe.block"].Status)
	}
	if f["probe.after"].Status != engine.StatusBlocked {
		t.Errorf("after: %s", f["probe.after"].Status)
	}
	if f["probe.restore"].Status != engine.StatusSucceeded {
		t.Errorf("restore: %s", f["probe.restore"].Status)
	}
	kinds := map[string]int{}
	for _, r := range h.records() {
		kinds[r.Kind]++
	}
	if kinds[engine.KindInterrupt] != 1 || kinds[engine.KindOutageEnd] != 1 {
		t.Errorf("want one interrupt and one outage_end record, got %v", kinds)
	}
}

func TestResumeSkipsCompletedAndRefusesChangedInputs(t *testing.T) {
	h := newHarness(t)
	input := filepath.Join(h.dir, "corpus.txt")
	if err := os.WriteFile(input, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := header + `
step "probe" "a" { file = "corpus.txt" }
step "probe" "b" { hang = true }
step "probe" "c" {}
`
	ctx := h.interruptWhen("probe.b", "SIGTERM")
	// A crash is simulated by an interrupt that leaves no campaign_end: run, then
	// drop the journal's last records? Simpler and real: a crash-free stop between
	// steps. Here: interrupt closes the campaign, so resume needs a fresh state.
	if _, err := h.apply(ctx, h.load(src)); err != nil {
		t.Fatal(err)
	}
	// The interrupted campaign is held: applying again continues it, without
	// re-sending the interrupted step (it did not declare rerun_safe). Since that
	// step never finished, the campaign did not complete: it stays held, naming it,
	// until a person closes it.
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil || sum.Status != engine.EndHeld || !strings.Contains(sum.Reason, "probe.b was interrupted and does not declare rerun_safe") {
		t.Fatalf("continuing a held campaign: %+v %v", sum, err)
	}
	if diff := cmp.Diff([]string{"probe.c"}, h.probe.ran()); diff != "" {
		t.Fatalf("the continued campaign ran (-want +got):\n%s", diff)
	}
	if _, err := engine.Close(h.state, "b reviewed", engine.SystemClock{}); err != nil {
		t.Fatal(err)
	}
	_, err = h.apply(context.Background(), h.load(src))
	if !errors.Is(err, engine.ErrClosed) {
		t.Fatalf("a closed campaign: apply must refuse it, got %v", err)
	}

	// Resume proper: a journal that ends between steps (the process died after a's
	// step_end) continues with b and c and never re-runs a.
	h2 := newHarness(t)
	if err := os.WriteFile(filepath.Join(h2.dir, "corpus.txt"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	srcOK := header + `
step "probe" "a" { file = "corpus.txt" }
step "probe" "b" {}
`
	if _, err := h2.apply(context.Background(), h2.load(srcOK)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h2.state, func(r engine.Record) bool { return r.Kind == engine.KindStepEnd && r.Step == "probe.a" })
	h2.probe.order = nil
	sum, err = h2.apply(context.Background(), h2.load(srcOK))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.b"}, h2.probe.ran()); diff != "" || sum.Status != "completed" {
		t.Fatalf("resume ran (-want +got):\n%s status %s", diff, sum.Status)
	}

	// Changing a completed step's file input is refused, naming the step and file.
	truncateAfter(t, h2.state, func(r engine.Record) bool { return r.Kind == engine.KindStepEnd && r.Step == "probe.a" })
	if err := os.WriteFile(filepath.Join(h2.dir, "corpus.txt"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = h2.apply(context.Background(), h2.load(srcOK))
	if !errors.Is(err, engine.ErrInputsChanged) || !strings.Contains(err.Error(), "probe.a") || !strings.Contains(err.Error(), "corpus.txt") {
		t.Fatalf("want refusal naming probe.a and corpus.txt, got %v", err)
	}
	// The refused apply journalled nothing: the campaign is as the dead apply left
	// it, not one that a refused apply left "running".
	before, _ := os.ReadFile(filepath.Join(h2.state, engine.JournalFile))
	if _, err := h2.apply(context.Background(), h2.load(srcOK)); !errors.Is(err, engine.ErrInputsChanged) {
		t.Fatalf("second refusal: %v", err)
	}
	if after, _ := os.ReadFile(filepath.Join(h2.state, engine.JournalFile)); !bytes.Equal(before, after) {
		t.Errorf("a refused apply wrote to the journal:\n%s", after[len(before):])
	}
}

// truncateAfter rewrites a test journal to end at the first record matching keep:
// it simulates a process that died at that point (tests only; rigor never truncates).
func truncateAfter(t *testing.T, state string, keep func(engine.Record) bool) {
	t.Helper()
	path := filepath.Join(state, engine.JournalFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	recs, _, _ := engine.ReadJournal(path)
	for i, r := range recs {
		if keep(r) {
			if err := os.WriteFile(path, []byte(strings.Join(lines[:i+1], "")), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("no record matched")
}

func TestFrozenInputChangeStops(t *testing.T) {
	h := newHarness(t)
	if err := os.WriteFile(filepath.Join(h.dir, "recipe.txt"), []byte("frozen"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.load(`
campaign "t" { frozen = ["recipe.txt"] }
step "probe" "tamper" { advance = "1s" }
step "probe" "uses_recipe" { file = "recipe.txt" }
step "probe" "restore" { always = true }
`)
	// The file changes after the plan is frozen, while the first step runs.
	h.probe.when("probe.tamper", func() {
		_ = os.WriteFile(filepath.Join(h.dir, "recipe.txt"), []byte("changed"), 0o644)
	})
	sum, err := h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	if f["probe.uses_recipe"].Class != engine.ClassFrozenInputChanged || sum.Status != engine.EndHeld {
		t.Fatalf("uses_recipe: %+v, summary %+v", f["probe.uses_recipe"], sum)
	}
	if f["probe.restore"].Status != engine.StatusSucceeded {
		t.Fatal("restore must still run")
	}
}

func TestAmendments(t *testing.T) {
	h := newHarness(t)
	base := header + `
step "probe" "a" {}
step "probe" "b" {
  value = 1
  hang  = var.hang
}
variable "hang" {
  type    = bool
  default = false
}
`
	// First apply freezes and runs a; b hangs and is interrupted, so b has started.
	ctx := h.interruptWhen("probe.b", "SIGINT")
	if _, err := h.apply(ctx, h.load(base, "hang=true")); err != nil {
		t.Fatal(err)
	}
	// Changing b (started) is refused and names b.
	changedB := strings.Replace(base, "value = 1", "value = 2", 1)
	_, err := engine.RecordAmendment(h.state, h.load(changedB, "hang=true"), "bigger", h.clock)
	if !errors.Is(err, engine.ErrAmendmentRefused) || !strings.Contains(err.Error(), "probe.b") {
		t.Fatalf("want refusal naming probe.b, got %v", err)
	}
	// Adding a step that never started is accepted.
	added := base + `step "probe" "extra" {}` + "\n"
	a, err := engine.RecordAmendment(h.state, h.load(added, "hang=true"), "extend coverage", h.clock)
	if err != nil {
		t.Fatal(err)
	}
	if a.Number != 1 || a.Diff.Summary() != "1 added" {
		t.Fatalf("amendment %+v", a)
	}
	eff, n, err := engine.EffectivePlan(h.state)
	if err != nil || n != 1 || !strings.Contains(string(eff), "probe.extra") {
		t.Fatalf("effective plan n=%d err=%v", n, err)
	}
	// The unamended file is now refused by apply.
	if _, err := h.apply(context.Background(), h.load(base, "hang=true")); !errors.Is(err, engine.ErrPlanChanged) {
		t.Fatalf("want ErrPlanChanged, got %v", err)
	}
}

func TestJournalChainDetectsFlippedByte(t *testing.T) {
	h := newHarness(t)
	if _, err := h.apply(context.Background(), h.load(header+`step "probe" "a" {}`+"\n"+`step "probe" "b" {}`)); err != nil {
		t.Fatal(err)
	}
	problems, err := engine.Verify(h.state)
	if err != nil || len(problems) != 0 {
		t.Fatalf("fresh state should verify: %v %v", problems, err)
	}
	path := filepath.Join(h.state, engine.JournalFile)
	data, _ := os.ReadFile(path)
	i := strings.Index(string(data), `"probe.a"`)
	data[i+2] = 'X' // probe.a -> pXobe.a inside an earlier record
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	problems, _ = engine.Verify(h.state)
	found := false
	for _, p := range problems {
		if p.Path == engine.JournalFile && strings.Contains(p.Problem, "does not match the hash") {
			found = true
		}
	}
	if !found {
		t.Fatalf("flipped byte not detected: %v", problems)
	}
	if _, _, err := engine.ReadJournal(path); !errors.Is(err, engine.ErrChainBroken) {
		t.Fatalf("ReadJournal: %v", err)
	}
}

func TestSecondApplyIsLockedOut(t *testing.T) {
	h := newHarness(t)
	lock, err := engine.AcquireLock(h.state)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	_, err = h.apply(context.Background(), h.load(header+`step "probe" "a" {}`))
	var locked *engine.ErrLocked
	if !errors.As(err, &locked) || locked.Pid != os.Getpid() {
		t.Fatalf("want ErrLocked naming pid %d, got %v", os.Getpid(), err)
	}
}

func TestAlwaysStepRunsDespiteChangedProtectedFile(t *testing.T) {
	h := newHarness(t)
	protected := filepath.Join(h.dir, "discovery.json")
	if err := os.WriteFile(protected, []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := h.load(`
campaign "t" { frozen = ["discovery.json"] }
step "probe" "tamper" {}
step "probe" "restore" {
  always = true
  file   = "discovery.json"
}
`)
	h.probe.when("probe.tamper", func() {
		_ = os.Remove(protected) // unreadable from now on
	})
	if _, err := h.apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.tamper", "probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("restore must run even though its protected file is gone (-want +got):\n%s", diff)
	}
	f := h.finals()["probe.restore"]
	if f.Status != engine.StatusFailed || !strings.Contains(f.Message, "discovery.json") || !strings.Contains(f.Message, "ran and succeeded") {
		t.Fatalf("restore record %+v should fail naming the file and say it ran", f)
	}
}

// A gate that answers holds the campaign before the step it was asked about: the
// always-steps still run, the held step is blocked with the answer, and the next
// apply (whose gate lets it through) runs what was held.
func TestGateHoldsBeforeAStepAndTheNextApplyContinues(t *testing.T) {
	h := newHarness(t)
	p := h.load(header + `
step "probe" "pilot" {}
step "probe" "candidate" { value = step.probe.pilot.value }
step "probe" "restore" { always = true }
`)
	var asked []string
	hold := func(next *plans.Instance, settled func(string) bool) string {
		asked = append(asked, fmt.Sprintf("%s pilot-settled=%v", next.Addr, settled("probe.pilot")))
		if next.Addr == "probe.candidate" {
			return "the rule cannot be resolved"
		}
		return ""
	}
	sum, err := engine.Apply(context.Background(), p, h.reg, engine.Options{StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), Gate: hold})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseGate || sum.Reason != "held before probe.candidate: the rule cannot be resolved" {
		t.Fatalf("status %q cause %q reason %q, want held by the gate before probe.candidate", sum.Status, sum.Cause, sum.Reason)
	}
	if diff := cmp.Diff([]string{"probe.pilot pilot-settled=false", "probe.candidate pilot-settled=true"}, asked); diff != "" {
		t.Errorf("gate asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"probe.pilot", "probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("ran (-want +got):\n%s", diff)
	}
	if f := h.finals()["probe.candidate"]; f.Status != engine.StatusBlocked || f.Class != engine.ClassGate || !strings.Contains(f.Message, "the rule cannot be resolved") {
		t.Errorf("held step: %s %s %q, want blocked by the gate", f.Status, f.Class, f.Message)
	}
	sum, err = h.apply(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndCompleted {
		t.Fatalf("second apply: %s (%s), want completed", sum.Status, sum.Reason)
	}
	if diff := cmp.Diff([]string{"probe.pilot", "probe.restore", "probe.candidate", "probe.restore"}, h.probe.ran()); diff != "" {
		t.Errorf("ran (-want +got):\n%s", diff)
	}
}
