package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
)

func kinds(recs []engine.Record, kind string) []engine.Record {
	var out []engine.Record
	for _, r := range recs {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

func lastEnd(t *testing.T, recs []engine.Record) engine.Record {
	t.Helper()
	ends := kinds(recs, engine.KindCampaignEnd)
	if len(ends) == 0 {
		t.Fatal("no campaign_end record")
	}
	return ends[len(ends)-1]
}

func attemptsOf(recs []engine.Record, step string) []engine.Record {
	var out []engine.Record
	for _, r := range recs {
		if r.Kind == engine.KindStepEnd && r.Step == step && r.Attempt > 0 {
			out = append(out, r)
		}
	}
	return out
}

// A restore that fails is never a success: the campaign is restore_failed, the
// outage stays open, status says so at the top, and the next apply retries the
// restore before anything else (issue 8, item 1).
func TestFailedRestoreIsRetriedFirst(t *testing.T) {
	h := newHarness(t)
	broken := filepath.Join(h.dir, "incumbent-broken")
	must(t, os.WriteFile(broken, nil, 0o644))
	src := header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "block" {}
step "probe" "later" {}
step "probe" "restore" {
  always         = true
  outage         = "end"
  fail_if_exists = "` + broken + `"
}
`
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndRestoreFailed || !sum.OutageOpen || len(sum.RestoreFailures) != 1 || !strings.Contains(sum.RestoreFailures[0], "probe.restore") {
		t.Fatalf("a failed restore must give restore_failed with the outage open and the step named: %+v", sum)
	}
	recs := h.records()
	if end := lastEnd(t, recs); end.Status != engine.EndRestoreFailed {
		t.Fatalf("campaign_end status %q, want restore_failed", end.Status)
	}
	if len(kinds(recs, engine.KindOutageEnd)) != 0 {
		t.Fatal("no outage_end may be written while the restore has not succeeded")
	}
	st, err := engine.ReadStatus(h.state)
	if err != nil {
		t.Fatal(err)
	}
	if st.Lifecycle != engine.LifecycleRestoreFailed || !st.OutageOpen {
		t.Fatalf("status: lifecycle %s outage open %v", st.Lifecycle, st.OutageOpen)
	}

	// Still broken: the retry fails again, and nothing else runs.
	h.probe.order = nil
	sum, err = h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("the retry ran (-want +got):\n%s", diff)
	}
	if sum.Status != engine.EndRestoreFailed {
		t.Fatalf("second failed restore: status %s", sum.Status)
	}

	// Fixed by hand: the retry is a new attempt, it closes the outage, and the
	// campaign is held for review rather than carrying on by itself.
	must(t, os.Remove(broken))
	h.probe.order = nil
	sum, err = h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("the retry ran (-want +got):\n%s", diff)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseRestoreRetry || sum.OutageOpen || !sum.Settled || sum.Exhausted {
		t.Fatalf("after a successful retry, with every step run: %+v", sum)
	}
	restores := attemptsOf(h.records(), "probe.restore")
	if len(restores) != 3 || restores[2].Status != engine.StatusSucceeded {
		t.Fatalf("want three restore attempts, the last succeeded: %+v", restores)
	}
	if len(kinds(h.records(), engine.KindOutageEnd)) != 1 {
		t.Fatal("the successful retry must close the outage")
	}

	// Every step had run in the first apply and nothing had failed but the
	// restore: applying again completes the campaign and runs no step, the
	// restore neither (the retry restored the incumbent).
	h.probe.order = nil
	sum, err = h.apply(context.Background(), h.load(src))
	if err != nil || sum.Status != engine.EndCompleted {
		t.Fatalf("the continued campaign: %+v %v", sum, err)
	}
	if ran := h.probe.ran(); len(ran) > 0 {
		t.Fatalf("applying a campaign with nothing left to run ran %v", ran)
	}
	if n := len(attemptsOf(h.records(), "probe.restore")); n != 3 {
		t.Fatalf("%d restore attempts, want the 3 before", n)
	}
}

// The engine never starts a step whose bound does not fit before the reserve, and
// an outage that still outlasts its budget is an overrun, recorded and returned
// (issue 8, item 3).
func TestOutageOverrunIsReported(t *testing.T) {
	h := newHarness(t)
	var alerts []string
	p := h.load(header + `
step "probe" "deploy" {
  outage  = "begin"
  timeout = "60m"
  advance = "60m"
}
step "probe" "restore" {
  always  = true
  outage  = "end"
  timeout = "20m"
  advance = "35m"
}
`)
	sum, err := engine.Apply(context.Background(), p, h.reg, engine.Options{StateDir: h.state, Clock: h.clock,
		Observe: func(e engine.Event) {
			if e.Kind == "alert" {
				alerts = append(alerts, e.Message)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Outage == nil || !sum.Outage.Overrun || sum.Outage.Elapsed.Minutes() != 95 {
		t.Fatalf("want an overrun of a 95m outage, got %+v", sum.Outage)
	}
	ends := kinds(h.records(), engine.KindOutageEnd)
	if len(ends) != 1 || !ends[0].Overrun || ends[0].ElapsedS != 95*60 {
		t.Fatalf("outage_end must record the overrun: %+v", ends)
	}
	if len(alerts) != 1 || !strings.Contains(alerts[0], "OUTAGE OVERRUN") {
		t.Fatalf("want one overrun alert, got %q", alerts)
	}
}

// A step that cannot fit is deferred together with what depends on it, while
// independent steps that fit still run (issue 10: a deferral skips only what
// depends on it), and the held campaign runs it in a new outage window.
func TestDeferredStepRunsInANewWindow(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "world" "candidate" {
  key     = "endpoint"
  outage  = "begin"
}
step "probe" "warm" {
  timeout    = "5m"
  advance    = "5m"
  depends_on = [step.world.candidate]
}
step "probe" "long" {
  timeout    = "68m"
  depends_on = [step.probe.warm]
}
step "probe" "after_long" { value = step.probe.long.value }
step "probe" "short" {
  timeout    = "5m"
  advance    = "5m"
  depends_on = [step.world.candidate]
}
step "world" "restore" {
  key    = "endpoint"
  always = true
  outage = "end"
}
`
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	if f["probe.long"].Status != engine.StatusDeferred || f["probe.after_long"].Status != engine.StatusDeferred || f["probe.short"].Status != engine.StatusSucceeded {
		t.Fatalf("long/after_long deferred, short run: got %s %s %s", f["probe.long"].Status, f["probe.after_long"].Status, f["probe.short"].Status)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseDeferred {
		t.Fatalf("a deferral holds the campaign: %+v", sum)
	}
	// A fresh window has 70 usable minutes: the 68 the deferred step may take fit.
	h.probe.order = nil
	if sum, err = h.apply(context.Background(), h.load(src)); err != nil || sum.Status != engine.EndCompleted {
		t.Fatalf("the deferred step must run in the new window: %+v %v", sum, err)
	}
	f = h.finals()
	if f["probe.long"].Status != engine.StatusSucceeded || f["probe.after_long"].Status != engine.StatusSucceeded {
		t.Fatalf("long and after_long must run in the new window: %s %s", f["probe.long"].Status, f["probe.after_long"].Status)
	}
	begins := kinds(h.records(), engine.KindOutageBegin)
	if len(begins) != 2 || begins[0].Window != 1 || begins[1].Window != 2 {
		t.Fatalf("each apply opens its own outage window: %+v", begins)
	}
	// The deploy the restore undid ran again before the deferred step's turn.
	if got := h.probe.ran(); len(got) < 1 || got[0] != "world.candidate" {
		t.Fatalf("the continued campaign must redeploy first, ran %v", got)
	}
}

// Hashing a step's inputs (a frozen file of gigabytes) takes time from an open
// outage: a step whose bound no longer fits once they are hashed is deferred,
// never started with less than its bound left before the reserve.
func TestBoundIsCheckedAfterHashing(t *testing.T) {
	h := newHarness(t)
	defer engine.SetHashedHook(func(addr string) {
		if addr == "probe.b" {
			h.clock.Advance(60 * time.Minute)
		}
	})()
	src := header + `
step "probe" "open" { outage = "begin" }
step "probe" "b" {
  timeout    = "30m"
  depends_on = [step.probe.open]
}
step "probe" "restore" {
  always = true
  outage = "end"
}
`
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	b := h.finals()["probe.b"]
	if b.Status != engine.StatusDeferred || !strings.Contains(b.Message, "needs up to 30m0s but only 10m0s remain") {
		t.Fatalf("probe.b: %s %q, want deferred with 10m left after hashing", b.Status, b.Message)
	}
	if slices.Contains(h.probe.ran(), "probe.b") || len(attemptsOf(h.records(), "probe.b")) != 0 {
		t.Fatal("probe.b started although its bound no longer fitted")
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseDeferred {
		t.Fatalf("summary %+v", sum)
	}
}

// A step started before the outage that may run past the time a new window
// leaves before its reserve keeps the outage from opening until it ends: the
// restore waits for every step, so the outage would overrun its budget. One that
// fits runs beside the window.
func TestOutageWaitsForALongStepStartedBefore(t *testing.T) {
	for name, tc := range map[string]struct {
		bound string
		waits bool
	}{
		"past the reserve":  {bound: "80m", waits: true},
		"within the window": {bound: "60m", waits: false},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			src := header + `
step "probe" "pre" {
  timeout = "` + tc.bound + `"
  sleep   = "300ms"
  uses    = ["p"]
}
step "probe" "open" {
  outage = "begin"
  uses   = ["o"]
}
step "probe" "in" {
  depends_on = [step.probe.open]
  uses       = ["o"]
}
step "probe" "restore" {
  always = true
  outage = "end"
}
`
			var notes []string
			sum, err := engine.Apply(context.Background(), h.load(src), h.reg, engine.Options{StateDir: h.state, Clock: h.clock,
				Observe: func(e engine.Event) {
					if e.Kind == "note" && e.Addr == "probe.open" {
						notes = append(notes, e.Message)
					}
				}})
			if err != nil || sum.Status != engine.EndCompleted {
				t.Fatalf("%+v %v", sum, err)
			}
			preEnd, openStart := -1, -1
			for i, r := range h.records() {
				switch {
				case r.Kind == engine.KindStepEnd && r.Step == "probe.pre":
					preEnd = i
				case r.Kind == engine.KindStepStart && r.Step == "probe.open":
					openStart = i
				}
			}
			if waited := openStart > preEnd; waited != tc.waits {
				t.Fatalf("probe.open started at record %d, probe.pre ended at %d: waited %v, want %v", openStart, preEnd, waited, tc.waits)
			}
			if tc.waits && (len(notes) != 1 || !strings.Contains(notes[0], "waits to open the outage while probe.pre (it may run 1h20m0s more) may still run past the time a new window leaves before its reserve")) {
				t.Fatalf("want one note saying why probe.open waits, got %q", notes)
			}
		})
	}
}

// A crash between restore's end record and outage_end is closed from the
// restore's evidence, without running it again (issue 8, item 4).
func TestCrashAfterRestoreClosesOutageFromEvidence(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "block" {}
step "probe" "restore" {
  always = true
  outage = "end"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepEnd && r.Step == "probe.restore" })
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.probe.ran()) != 0 {
		t.Fatalf("nothing may run again, ran %v", h.probe.ran())
	}
	ends := kinds(h.records(), engine.KindOutageEnd)
	if len(ends) != 1 || !strings.Contains(ends[0].Message, "closed from the evidence of probe.restore") {
		t.Fatalf("the outage must be closed from the restore's evidence: %+v", ends)
	}
	if sum.Status != engine.EndCompleted || sum.OutageOpen {
		t.Fatalf("summary %+v", sum)
	}
	if problems, err := engine.Verify(h.state); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
}

// A restore that started but did not end is run again.
func TestCrashDuringRestoreRunsItAgain(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "block" {}
step "probe" "restore" {
  always = true
  outage = "end"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepStart && r.Step == "probe.restore" })
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("only the restore runs again (-want +got):\n%s", diff)
	}
	restores := attemptsOf(h.records(), "probe.restore")
	if len(restores) != 2 || restores[0].Class != engine.ClassCrash || restores[1].Status != engine.StatusSucceeded {
		t.Fatalf("want the crashed attempt closed and a new one succeeded: %+v", restores)
	}
	if sum.Status != engine.EndCompleted || sum.OutageOpen {
		t.Fatalf("summary %+v", sum)
	}
}

// After a crash between steps, the targets the dead apply deployed are re-read;
// when they are as the journal left them, the campaign goes on in the same window.
func TestCrashResumeRefreshesAndContinues(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "world" "candidate" {
  key    = "endpoint"
  outage = "begin"
}
step "probe" "b1" { depends_on = [step.world.candidate] }
step "probe" "b2" { depends_on = [step.probe.b1] }
step "world" "restore" {
  key    = "endpoint"
  always = true
  outage = "end"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepEnd && r.Step == "probe.b1" })
	// The dead apply's restore never happened: the candidate is still in place.
	inc := ""
	for _, r := range attemptsOf(h.records(), "world.candidate") {
		inc = string(r.Outputs)
	}
	h.world.set("endpoint", between(inc, `"incarnation":"`, `"`))
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"probe.b2", "world.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("resume ran (-want +got):\n%s", diff)
	}
	refresh := kinds(h.records(), engine.KindRefresh)
	if len(refresh) != 1 || refresh[0].Step != "world.candidate" || refresh[0].Status != engine.StatusSucceeded {
		t.Fatalf("want one succeeded refresh of world.candidate: %+v", refresh)
	}
	if sum.Status != engine.EndCompleted || len(kinds(h.records(), engine.KindOutageBegin)) != 1 {
		t.Fatalf("the resumed campaign completes in its first window: %+v", sum)
	}
}

// A target that changed while no apply ran is never reused: class identity, the
// campaign is restored and held.
func TestCrashResumeRefusesAChangedTarget(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "world" "candidate" {
  key    = "endpoint"
  outage = "begin"
}
step "probe" "b1" { depends_on = [step.world.candidate] }
step "probe" "b2" { depends_on = [step.probe.b1] }
step "world" "restore" {
  key    = "endpoint"
  always = true
  outage = "end"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepEnd && r.Step == "probe.b1" })
	h.world.set("endpoint", "someone else's server")
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"world.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("only the restore may run (-want +got):\n%s", diff)
	}
	refresh := kinds(h.records(), engine.KindRefresh)
	if len(refresh) != 1 || refresh[0].Status != engine.StatusFailed || refresh[0].Class != engine.ClassIdentity || !strings.Contains(refresh[0].Message, "someone else's server") {
		t.Fatalf("want a failed identity refresh naming what runs there: %+v", refresh)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseRecovered || h.finals()["probe.b2"].Status != engine.StatusBlocked {
		t.Fatalf("summary %+v, b2 %s", sum, h.finals()["probe.b2"].Status)
	}
}

// A measured step interrupted by a crash keeps its attempt and is never re-sent;
// the campaign holds, naming it, and continues without it on the next apply.
// A step the plan declares rerun_safe runs again as a new attempt instead.
func TestCrashInterruptedStep(t *testing.T) {
	for name, tc := range map[string]struct {
		safe     string
		wantRan  []string
		wantEnd  string
		attempts int
	}{
		"measured block is not re-sent": {safe: "false", wantRan: []string{"probe.restore"}, wantEnd: engine.EndHeld, attempts: 1},
		"rerun_safe step runs again":    {safe: "true", wantRan: []string{"probe.block", "probe.after", "probe.later", "probe.restore"}, wantEnd: engine.EndCompleted, attempts: 2},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			src := header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "block" { rerun_safe = ` + tc.safe + ` }
step "probe" "after" { depends_on = [step.probe.block] }
step "probe" "later" { depends_on = [step.probe.after] }
step "probe" "restore" {
  always = true
  outage = "end"
}
`
			if _, err := h.apply(context.Background(), h.load(src)); err != nil {
				t.Fatal(err)
			}
			truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepStart && r.Step == "probe.block" })
			h.probe.order = nil
			sum, err := h.apply(context.Background(), h.load(src))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRan, h.probe.ran()); diff != "" {
				t.Fatalf("ran (-want +got):\n%s", diff)
			}
			blocks := attemptsOf(h.records(), "probe.block")
			if len(blocks) != tc.attempts || blocks[0].Status != engine.StatusInterrupted || blocks[0].Class != engine.ClassCrash {
				t.Fatalf("block attempts %+v", blocks)
			}
			if sum.Status != tc.wantEnd {
				t.Fatalf("status %s (%s), want %s", sum.Status, sum.Reason, tc.wantEnd)
			}
			if tc.wantEnd == engine.EndHeld {
				if !strings.Contains(sum.Reason, "probe.block") || !strings.Contains(sum.Reason, "not re-sent") {
					t.Fatalf("the hold must name the interrupted step: %s", sum.Reason)
				}
				// Continue: the interrupted block stays as it is, and what depends on
				// it cannot run.
				h.probe.order = nil
				sum, err = h.apply(context.Background(), h.load(src))
				if err != nil {
					t.Fatal(err)
				}
				// Nothing is left that could run: no step runs, the restore neither
				// (the apply that held the campaign restored the incumbent).
				if ran := h.probe.ran(); len(ran) > 0 {
					t.Fatalf("continue ran %v, want nothing", ran)
				}
				if len(attemptsOf(h.records(), "probe.block")) != 1 || h.finals()["probe.after"].Status != engine.StatusBlocked {
					t.Fatal("the interrupted block must not be re-sent, and what needs it stays blocked")
				}
				// Nothing is left that can run, but the block never finished: the
				// campaign stays held, naming it, never "completed".
				if sum.Status != engine.EndHeld || !strings.Contains(sum.Reason, "probe.block was interrupted and does not declare rerun_safe, so no apply runs it again; waiting on it, never run: probe.after, probe.later") {
					t.Fatalf("nothing is left to run but the block never finished: held naming it, got %+v", sum)
				}
			}
		})
	}
}

// Interrupt mid-campaign, apply again: the campaign continues in a second outage
// window, redeploying the candidate the restore undid, and completes.
func TestInterruptedCampaignContinuesInSecondWindow(t *testing.T) {
	h := newHarness(t)
	marker := filepath.Join(h.dir, "hang")
	src := header + `
step "world" "incumbent" { key = "endpoint" }
step "probe" "inc_block" { depends_on = [step.world.incumbent] }
step "world" "candidate" {
  key        = "endpoint"
  outage     = "begin"
  depends_on = [step.probe.inc_block]
}
step "probe" "cand_1" { depends_on = [step.world.candidate] }
step "probe" "cand_2" {
  depends_on     = [step.probe.cand_1]
  fail_if_exists = "` + marker + `"
}
step "world" "restore" {
  key    = "endpoint"
  always = true
  outage = "end"
}
`
	must(t, os.WriteFile(marker, nil, 0o644))
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		for a := range h.probe.started {
			if a == "probe.cand_1" {
				cancel(errors.New("SIGINT"))
				return
			}
		}
	}()
	sum, err := h.apply(ctx, h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld {
		t.Fatalf("interrupted: %+v", sum)
	}
	must(t, os.Remove(marker))
	h.probe.order = nil
	sum, err = h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	// cand_1 either finished before the interrupt took effect or was interrupted;
	// the probe does not hang, so it finished: only cand_2 and its deploy remain.
	if f["probe.cand_2"].Status != engine.StatusSucceeded || sum.Status != engine.EndCompleted {
		t.Fatalf("second window: %+v; cand_2 %s", sum, f["probe.cand_2"].Status)
	}
	if got := h.probe.ran(); got[0] != "world.candidate" {
		t.Fatalf("the candidate the restore undid must be deployed again first, ran %v", got)
	}
	begins := kinds(h.records(), engine.KindOutageBegin)
	ends := kinds(h.records(), engine.KindOutageEnd)
	if len(begins) != 2 || len(ends) != 2 || begins[1].Window != 2 || ends[1].Window != 2 {
		t.Fatalf("want two closed outage windows: begins %+v ends %+v", begins, ends)
	}
	if n := len(attemptsOf(h.records(), "world.candidate")); n != 2 {
		t.Fatalf("want the candidate deployed twice, got %d", n)
	}
	if n := len(attemptsOf(h.records(), "world.incumbent")); n != 1 {
		t.Fatalf("the incumbent's arm is done: its deploy must not run again, ran %d times", n)
	}
}

// Pinned inputs: the first digest recorded under a name pins it; a later start
// that sees another digest fails before it runs; an always-step still runs and is
// told the pinned digest (issue 9, item 3 and 4, engine side).
func TestPinnedInputsAreCheckedBeforeEveryStart(t *testing.T) {
	h := newHarness(t)
	h.world.pin("corpus c4", "aaaa")
	src := header + `
step "world" "first"  {
  key = "x"
  pin = "corpus c4"
}
step "probe" "edit" {}
step "world" "second" {
  key        = "y"
  pin        = "corpus c4"
  depends_on = [step.probe.edit]
}
step "world" "restore" {
  key    = "x"
  pin    = "corpus c4"
  always = true
}
`
	h.probe.when("probe.edit", func() {
		h.world.pin("corpus c4", "bbbb")
	})
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	if f["world.second"].Class != engine.ClassFrozenInputChanged || !strings.Contains(f["world.second"].Message, "corpus c4: pinned aaaa, now bbbb") {
		t.Fatalf("second: %+v", f["world.second"])
	}
	for _, a := range h.probe.ran() {
		if a == "world.second" {
			t.Fatal("a step whose pinned input changed must not run")
		}
	}
	if got := h.probe.pinned["world.restore"]["corpus c4"]; got != "aaaa" {
		t.Fatalf("the restore must be told the pinned digest, got %q", got)
	}
	if f["world.restore"].Status != engine.StatusFailed || sum.Status != engine.EndRestoreFailed {
		t.Fatalf("a restore whose pinned input changed ran but failed: %+v", f["world.restore"])
	}
	starts := kinds(h.records(), engine.KindStepStart)
	if starts[0].Pinned["corpus c4"] != "aaaa" {
		t.Fatalf("the start record keeps the digest it saw: %+v", starts[0].Pinned)
	}
}

// A campaign.frozen file is pinned at freeze and checked before every step, not
// only before steps that name it.
func TestFrozenFileCheckedBeforeEveryStep(t *testing.T) {
	h := newHarness(t)
	must(t, os.WriteFile(filepath.Join(h.dir, "recipe.txt"), []byte("frozen"), 0o644))
	p := h.load(`
campaign "t" { frozen = ["recipe.txt"] }
step "probe" "tamper" {}
step "probe" "next" {}
`)
	h.probe.when("probe.tamper", func() {
		_ = os.WriteFile(filepath.Join(h.dir, "recipe.txt"), []byte("changed"), 0o644)
	})
	if _, err := h.apply(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if f := h.finals()["probe.next"]; f.Class != engine.ClassFrozenInputChanged || !strings.Contains(f.Message, "file recipe.txt") {
		t.Fatalf("next: %+v", f)
	}
	if diff := cmp.Diff([]string{"probe.tamper"}, h.probe.ran()); diff != "" {
		t.Fatalf("ran (-want +got):\n%s", diff)
	}
}

// History gives a running step every ended attempt, in journal order, with outputs.
func TestHistoryListsEndedAttempts(t *testing.T) {
	h := newHarness(t)
	if _, err := h.apply(context.Background(), h.load(header+`
step "world" "deploy" { key = "k" }
step "probe" "a" { fail = "record" }
step "probe" "b" {}
`)); err != nil {
		t.Fatal(err)
	}
	hist := h.probe.history["probe.b"]
	if len(hist) != 2 || hist[0].Addr != "world.deploy" || hist[0].Type != "world" || hist[1].Addr != "probe.a" || hist[1].Class != engine.ClassRecord {
		t.Fatalf("history seen by probe.b: %+v", hist)
	}
	if inc := hist[0].Outputs.GetAttr("incarnation").AsString(); !strings.HasPrefix(inc, "world.deploy#") {
		t.Fatalf("history must carry outputs, got %q", inc)
	}
}

// rigor close closes a held campaign for good; it refuses while the outage is open.
func TestCloseHeldCampaign(t *testing.T) {
	h := newHarness(t)
	broken := filepath.Join(h.dir, "broken")
	must(t, os.WriteFile(broken, nil, 0o644))
	src := header + `
step "probe" "deploy" { outage = "begin" }
step "probe" "fails" { fail = "gate" }
step "probe" "restore" {
  always         = true
  outage         = "end"
  fail_if_exists = "` + broken + `"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Close(h.state, "reviewed", h.clock); !errors.Is(err, engine.ErrCloseRefused) || !strings.Contains(err.Error(), "restore") {
		t.Fatalf("close with a failed restore must be refused: %v", err)
	}
	must(t, os.Remove(broken))
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.Close(h.state, "", h.clock); !errors.Is(err, engine.ErrCloseRefused) {
		t.Fatalf("close without a reason must be refused: %v", err)
	}
	rec, err := engine.Close(h.state, "gate failed; reviewed, not continued", h.clock)
	if err != nil || rec.Kind != engine.KindCampaignClosed {
		t.Fatalf("close: %+v %v", rec, err)
	}
	if _, err := h.apply(context.Background(), h.load(src)); !errors.Is(err, engine.ErrClosed) || !strings.Contains(err.Error(), "closed by rigor close") {
		t.Fatalf("apply on a closed campaign: %v", err)
	}
	if st, _ := engine.ReadStatus(h.state); st.Lifecycle != engine.LifecycleClosed || st.EndReason != "gate failed; reviewed, not continued" {
		t.Fatalf("status: %+v", st)
	}
}

func between(s, from, to string) string {
	_, after, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(after, to)
	return v
}

// A crash in the middle of a deploy (rerun_safe) leaves what runs at its key
// unknown: the resume does not hold the world to the deploy before it, it runs the
// interrupted deploy again and goes on.
func TestCrashDuringARerunSafeDeploy(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "world" "incumbent" { key = "endpoint" }
step "probe" "pilot" { depends_on = [step.world.incumbent] }
step "world" "candidate" {
  key        = "endpoint"
  outage     = "begin"
  rerun_safe = true
  depends_on = [step.probe.pilot]
}
step "probe" "block" { depends_on = [step.world.candidate] }
step "world" "restore" {
  key    = "endpoint"
  always = true
  outage = "end"
}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepStart && r.Step == "world.candidate" })
	// The dead deploy had already taken the incumbent out of service.
	h.world.set("endpoint", "half-deployed")
	h.probe.order = nil
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"world.candidate", "probe.block", "world.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("resume ran (-want +got):\n%s", diff)
	}
	if n := len(kinds(h.records(), engine.KindRefresh)); n != 0 {
		t.Fatalf("nothing is refreshed while the interrupted deploy runs again: %d refresh records", n)
	}
	if sum.Status != engine.EndCompleted {
		t.Fatalf("summary %+v", sum)
	}
}

// An apply killed while it froze the plan (files written, no plan_frozen record)
// leaves a state the next apply freezes again, whichever plan it brings: nothing was
// frozen there, and no record accounts for the files.
func TestCrashDuringFreeze(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "probe" "a" {}
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	// What a kill between the plan files and the first record leaves.
	must(t, os.Remove(filepath.Join(h.state, engine.JournalFile)))
	must(t, os.RemoveAll(filepath.Join(h.state, "attempts")))
	must(t, os.Remove(filepath.Join(h.state, engine.ManifestFile)))
	other := src + `step "probe" "b" {}` + "\n"
	sum, err := h.apply(context.Background(), h.load(other))
	if err != nil || sum.Status != engine.EndCompleted {
		t.Fatalf("the interrupted freeze must be done again: %+v %v", sum, err)
	}
	if problems, err := engine.Verify(h.state); err != nil || len(problems) > 0 {
		t.Fatalf("verify: %v %v", problems, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.state, engine.PlanDir, "frozen.hcl")); !strings.Contains(string(b), `step "probe" "b"`) {
		t.Fatalf("the frozen plan must be the one applied now: %s", b)
	}
}

// A campaign stopped by a failure never ends "completed" by itself: once nothing
// left can run it stays held, saying so, until `rigor close` closes it; an arm stop
// is not such a failure (the other arms ran as the plan says).
func TestStoppedCampaignIsNeverCompleted(t *testing.T) {
	h := newHarness(t)
	src := header + `
step "probe" "deploy" { fail = "health" }
step "probe" "block" { depends_on = [step.probe.deploy] }
step "probe" "restore" { always = true }
`
	if sum, err := h.apply(context.Background(), h.load(src)); err != nil || sum.Status != engine.EndHeld {
		t.Fatalf("first apply: %+v %v", sum, err)
	}
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || !sum.Exhausted || !strings.Contains(sum.Reason, "nothing left can run, but probe.deploy failed (health)") {
		t.Fatalf("a continued apply with nothing left must stay held, naming the failure: %+v", sum)
	}
	if n := len(attemptsOf(h.records(), "probe.restore")); n != 1 {
		t.Fatalf("the restore ran %d times; with nothing left to run, applying again must not run it", n)
	}
	if _, err := engine.Close(h.state, "deploy broken; reviewed", h.clock); err != nil {
		t.Fatal(err)
	}
}

// safeProbe is a probe whose step type says it is safe to run again by nature (as
// freeze is: it computes and sends nothing measured).
type safeProbe struct{ *probe }

func (safeProbe) RerunSafe() bool { return true }

// TestCrashInterruptedRerunSafeType: a step whose type is rerun-safe by nature runs
// again after a crash without declaring rerun_safe, and the campaign completes.
func TestCrashInterruptedRerunSafeType(t *testing.T) {
	h := newHarness(t)
	h.reg["freeze"] = safeProbe{h.probe}
	src := header + `
step "freeze" "counts" {}
step "probe" "after" { depends_on = [step.freeze.counts] }
step "probe" "restore" { always = true }
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	truncateAfter(t, h.state, func(r engine.Record) bool { return r.Kind == engine.KindStepStart && r.Step == "freeze.counts" })
	sum, err := h.apply(context.Background(), h.load(src))
	if err != nil {
		t.Fatal(err)
	}
	att := attemptsOf(h.records(), "freeze.counts")
	if len(att) != 2 || att[0].Status != engine.StatusInterrupted || att[1].Status != engine.StatusSucceeded || sum.Status != engine.EndCompleted {
		t.Fatalf("freeze attempts %+v, campaign %s (%s); want it run again and the campaign completed", att, sum.Status, sum.Reason)
	}
}
