package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/zclconf/go-cty/cty"
)

// fakeBlock is a step type named "block", so matrices expand into it and captures
// can run during it: it reports its first request and each completed one through
// Progress, takes `per_request` for each of `requests`, and fails with the class its
// target's labels name (fail) for the repetition they name (fail_rep), or succeeds
// with the number of failed requests they name (failed_requests).
type fakeBlock struct {
	p *probe
}

func (b *fakeBlock) Spec() hcldec.ObjectSpec {
	dyn := func(n string) hcldec.Spec { return &hcldec.AttrSpec{Name: n, Type: cty.DynamicPseudoType} }
	return hcldec.ObjectSpec{
		"target": dyn("target"), "workload": dyn("workload"), "gates": dyn("gates"),
		"concurrency": &hcldec.AttrSpec{Name: "concurrency", Type: cty.Number},
		"requests":    &hcldec.AttrSpec{Name: "requests", Type: cty.Number},
		"repetition":  &hcldec.AttrSpec{Name: "repetition", Type: cty.Number},
		"arm":         &hcldec.AttrSpec{Name: "arm", Type: cty.String},
		"cell":        &hcldec.AttrSpec{Name: "cell", Type: cty.String},
		"phase":       &hcldec.AttrSpec{Name: "phase", Type: cty.String},
		"primed":      &hcldec.AttrSpec{Name: "primed", Type: cty.Bool},
		"reset_cache": &hcldec.AttrSpec{Name: "reset_cache", Type: cty.Bool},
		"per_request": &hcldec.AttrSpec{Name: "per_request", Type: cty.String},
	}
}

func (b *fakeBlock) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"requests": cty.Number, "failed": cty.Number})
}

func (b *fakeBlock) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	b.p.mu.Lock()
	b.p.order = append(b.p.order, sc.Addr)
	b.p.mu.Unlock()
	cfg := sc.Config
	n := 4
	if v := cfg.GetAttr("requests"); !v.IsNull() {
		i, _ := v.AsBigFloat().Int64()
		n = int(i)
	}
	per := 20 * time.Millisecond
	if v := cfg.GetAttr("per_request"); !v.IsNull() {
		per, _ = time.ParseDuration(v.AsString())
	}
	out := func(failed int) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{"requests": cty.NumberIntVal(int64(n)), "failed": cty.NumberIntVal(int64(failed))})
	}
	if t := cfg.GetAttr("target"); !t.IsNull() && t.Type().IsObjectType() && t.Type().HasAttribute("labels") && t.GetAttr("labels").Type().HasAttribute("fail") {
		l := t.GetAttr("labels")
		rep := cfg.GetAttr("repetition")
		if !rep.IsNull() && rep.AsBigFloat().String() == l.GetAttr("fail_rep").AsString() {
			return engine.FailedWith(engine.FailureClass(l.GetAttr("fail").AsString()), out(n), "target told to fail with %s", l.GetAttr("fail").AsString())
		}
	}
	failed := 0 // requests the target's labels say fail while the block succeeds
	if t := cfg.GetAttr("target"); !t.IsNull() && t.Type().IsObjectType() && t.Type().HasAttribute("labels") && t.GetAttr("labels").Type().HasAttribute("failed_requests") {
		fmt.Sscan(t.GetAttr("labels").GetAttr("failed_requests").AsString(), &failed)
	}
	sc.Progress(engine.Progress{Total: n, Sending: true})
	for i := 1; i <= n; i++ {
		select {
		case <-time.After(per):
		case <-ctx.Done():
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted}
		}
		sc.Progress(engine.Progress{Done: i, Total: n})
	}
	return engine.Succeeded(out(failed))
}

func armHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.reg["block"] = &fakeBlock{p: h.probe}
	return h
}

const armPlan = header + `
target "a" {
  endpoint = "http://a"
}
target "b" {
  endpoint = "http://b"
  labels   = { fail = "health", fail_rep = "1" }
}
target "c" {
  endpoint = "http://c"
}
workload "w" {}

matrix "m" {
  workload    = workload.w
  concurrency = [1]
  repetitions = 2
  requests    = 2
  uses        = ["gpu"]
  arm "a" {
    target = target.a
  }
  arm "b" {
    target = target.b
  }
  arm "c" {
    target = target.c
  }
}

# Runs only if the failing arm is clean: it is not, so this is skipped.
step "probe" "extended" {
  condition = outcome.arm.m.b.clean
}
step "probe" "after_extended" { value = step.probe.extended.value }

# Runs because the failed block only stopped its arm (its disposition), not the
# campaign.
step "probe" "after_arm_stop" {
  condition = outcome.block.m["b/c1/r1"].disposition == "stop_arm" && outcome.block.m["a/c1/r1"].disposition == ""
}

# Runs because arm b stopped: its failed block and the one its stop blocked both
# count as failed blocks.
step "probe" "b_counts" {
  condition = outcome.arm.m.b.stopped && outcome.arm.m.b.reason != "" && outcome.arm.m.b.failed_blocks == 2
}

# Runs because the first arm is clean.
step "probe" "extended_a" {
  condition = outcome.arm.m.a.clean && outcome.block.m["a/c1/r2"].status == "succeeded"
}

step "probe" "restore" {
  always = true
}
`

// An operational failure in one arm stops that arm: its remaining blocks are
// blocked, the other arms run, a lane gated on the failed arm is skipped with its
// condition as the reason, and the campaign completes (issue 10).
func TestOperationalFailureStopsTheArm(t *testing.T) {
	h := armHarness(t)
	sum, err := h.apply(context.Background(), h.load(armPlan))
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	if r := f[`block.m["b/c1/r1"]`]; r.Status != engine.StatusFailed || r.Policy != engine.PolicyStopArm {
		t.Fatalf("b/c1/r1: %s policy %s, want failed with stop_arm", r.Status, r.Policy)
	}
	if r := f[`block.m["b/c1/r2"]`]; r.Status != engine.StatusBlocked || !strings.Contains(r.Message, "arm m/b stopped") || r.Class != engine.ClassHealth {
		t.Fatalf("b/c1/r2: %+v, want blocked: arm stopped", r)
	}
	for _, a := range []string{`block.m["c/c1/r1"]`, `block.m["c/c1/r2"]`, `block.m["a/c1/r2"]`} {
		if f[a].Status != engine.StatusSucceeded {
			t.Errorf("%s: %s; the other arms go on", a, f[a].Status)
		}
	}
	if r := f["probe.extended"]; r.Status != engine.StatusSkipped || r.Message != "skipped: condition outcome.arm.m.b.clean is false" {
		t.Fatalf("extended: %+v", r)
	}
	if r := f["probe.after_extended"]; r.Status != engine.StatusSkipped || !strings.Contains(r.Message, "dependency probe.extended is skipped") {
		t.Fatalf("after_extended: %+v", r)
	}
	if f["probe.after_arm_stop"].Status != engine.StatusSucceeded {
		t.Fatalf("after_arm_stop: %+v; a condition reads what the engine did about a failure", f["probe.after_arm_stop"])
	}
	if f["probe.b_counts"].Status != engine.StatusSucceeded {
		t.Fatalf("b_counts: %+v; a stopped arm counts its blocked block as failed", f["probe.b_counts"])
	}
	if f["probe.extended_a"].Status != engine.StatusSucceeded {
		t.Fatalf("extended_a: %+v", f["probe.extended_a"])
	}
	if sum.Status != engine.EndCompleted || !strings.Contains(sum.Reason, "arm m/b stopped") {
		t.Fatalf("summary %+v", sum)
	}
	// A stopped arm stays stopped: the campaign is closed, nothing is pending.
	if sum.Counts[engine.StatusSkipped] != 2 || sum.Counts[engine.StatusBlocked] != 1 {
		t.Fatalf("counts %v", sum.Counts)
	}
}

// on_failure = "hold" holds the campaign for review even for a request-level failure.
func TestOnFailureHold(t *testing.T) {
	h := newHarness(t)
	sum, err := h.apply(context.Background(), h.load(header+`
step "probe" "cell" {
  fail       = "record"
  on_failure = "hold"
}
step "probe" "next" {}
step "probe" "restore" { always = true }
`))
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndHeld || sum.Cause != engine.CauseOnFailureHold {
		t.Fatalf("summary %+v", sum)
	}
	if diff := cmp.Diff([]string{"probe.cell", "probe.restore"}, h.probe.ran()); diff != "" {
		t.Fatalf("ran (-want +got):\n%s", diff)
	}
}

// on_failure keyed by class: the class it names gets that policy, every other class
// keeps its default.
func TestOnFailureByClass(t *testing.T) {
	for _, tc := range []struct {
		fail      string
		wantCause string
		wantRan   []string
	}{
		{"health", engine.CauseOnFailureHold, []string{"probe.cell", "probe.restore"}},
		{"record", "", []string{"probe.cell", "probe.next", "probe.restore"}},
		{"gate", engine.CauseStopped, []string{"probe.cell", "probe.restore"}},
	} {
		t.Run(tc.fail, func(t *testing.T) {
			h := newHarness(t)
			sum, err := h.apply(context.Background(), h.load(header+`
step "probe" "cell" {
  fail       = "`+tc.fail+`"
  on_failure = { health = "hold", record = "continue" }
}
step "probe" "next" {}
step "probe" "restore" { always = true }
`))
			if err != nil {
				t.Fatal(err)
			}
			if sum.Cause != tc.wantCause {
				t.Fatalf("a %s failure: summary %+v, want cause %q", tc.fail, sum, tc.wantCause)
			}
			if diff := cmp.Diff(tc.wantRan, h.probe.ran()); diff != "" {
				t.Fatalf("ran (-want +got):\n%s", diff)
			}
		})
	}
}

// A running capture does not count against Parallelism either: with 2, a step
// waiting for a free slot starts beside the block while its capture still runs.
func TestRunningCaptureDoesNotCountAgainstParallelism(t *testing.T) {
	h := armHarness(t)
	var sawCapture bool
	h.probe.when("probe.other", func() {
		h.probe.mu.Lock()
		sawCapture = h.probe.active["trace"] > 0
		h.probe.mu.Unlock()
	})
	sum, err := engine.Apply(context.Background(), h.load(header+`
step "block" "load" {
  requests    = 10
  per_request = "50ms"
  uses        = ["gpu"]
}
step "probe" "capture" {
  during               = step.block.load
  start_after_requests = 1
  sleep                = "300ms"
  uses                 = ["trace"]
}
step "probe" "pre" {
  sleep = "150ms"
  uses  = ["cpu"]
}
step "probe" "other" {
  uses       = ["cpu"]
  depends_on = [step.probe.pre]
}
step "probe" "restore" { always = true }
`), h.reg, engine.Options{StateDir: h.state, Parallelism: 2})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Status != engine.EndCompleted {
		t.Fatalf("campaign %s: %s", sum.Status, sum.Reason)
	}
	if !sawCapture {
		t.Error("probe.other waited for the capture to end: a running capture counted against --parallelism 2")
	}
}

// A capture declared `during` a block starts while the block runs, once its start
// condition holds, and records both windows; one whose block ends first is refused;
// one that outlasts its block is incomplete instrumentation, not a quiet success
// (issue 12).
func TestCaptureRunsDuringItsBlock(t *testing.T) {
	cases := map[string]struct {
		capture    string
		wantStatus engine.Status
		wantClass  engine.FailureClass
		overlapped *bool
		message    string
		// parallelism is --parallelism (0: the default): a capture does not count
		// against it, since it runs beside a block that is already running.
		parallelism int
	}{
		"after two requests": {
			capture: `start_after_requests = 2
  sleep = "30ms"`,
			wantStatus: engine.StatusSucceeded, overlapped: ptrBool(true),
		},
		"one step at a time": {
			capture: `start_after_requests = 2
  sleep = "30ms"`,
			wantStatus: engine.StatusSucceeded, overlapped: ptrBool(true), parallelism: 1,
		},
		"after a delay": {
			capture: `start_after = "40ms"
  sleep = "30ms"`,
			wantStatus: engine.StatusSucceeded, overlapped: ptrBool(true),
		},
		"block ends first": {
			capture:    `start_after = "5s"`,
			wantStatus: engine.StatusFailed, wantClass: engine.ClassInstrumentation,
			message: "refused: block.load ended",
		},
		"outlasts its block": {
			capture: `start_after_requests = 1
  sleep = "600ms"`,
			wantStatus: engine.StatusFailed, wantClass: engine.ClassInstrumentation, overlapped: ptrBool(false),
			message: "did not overlap block.load as declared",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := armHarness(t)
			// The capture is declared first and uses nothing (so it is exclusive):
			// it must neither block its block nor be blocked by it.
			sum, err := engine.Apply(context.Background(), h.load(header+`
step "probe" "capture" {
  during     = step.block.load
  on_failure = "continue"
  `+tc.capture+`
}
step "block" "load" {
  requests    = 10
  per_request = "30ms"
  uses        = ["gpu"]
}
step "probe" "restore" { always = true }
`), h.reg, engine.Options{StateDir: h.state, Parallelism: tc.parallelism})
			if err != nil {
				t.Fatal(err)
			}
			f := h.finals()
			c := f["probe.capture"]
			if c.Status != tc.wantStatus || c.Class != tc.wantClass || !strings.Contains(c.Message, tc.message) {
				t.Fatalf("capture: %s %s %q; want %s %s %q", c.Status, c.Class, c.Message, tc.wantStatus, tc.wantClass, tc.message)
			}
			if f["block.load"].Status != engine.StatusSucceeded || sum.Status != engine.EndCompleted {
				t.Fatalf("the block must run as usual: %+v %+v", f["block.load"], sum)
			}
			if tc.overlapped == nil {
				return
			}
			b, err := os.ReadFile(filepath.Join(h.state, c.Dir, "overlap.json"))
			if err != nil {
				t.Fatal(err)
			}
			type window struct {
				Start *time.Time `json:"start"`
				End   *time.Time `json:"end"`
			}
			var o struct {
				Block         string `json:"block"`
				Overlapped    bool   `json:"overlapped"`
				BlockWindow   window `json:"block_window"`
				CaptureWindow window `json:"capture_window"`
			}
			if err := json.Unmarshal(b, &o); err != nil {
				t.Fatal(err)
			}
			if o.Block != "block.load" || o.Overlapped != *tc.overlapped || o.BlockWindow.Start == nil || o.CaptureWindow.Start == nil {
				t.Fatalf("overlap.json: %s", b)
			}
			if !o.CaptureWindow.Start.After(*o.BlockWindow.Start) {
				t.Fatalf("the capture must start after the block's first request: %s", b)
			}
		})
	}
}

func ptrBool(b bool) *bool { return &b }

// Captures under every cell of a matrix, one per block, each in its own window:
// for_each chooses the block.
func TestCapturesForEachBlock(t *testing.T) {
	h := armHarness(t)
	var mu sync.Mutex
	seen := map[string]string{}
	_, err := engine.Apply(context.Background(), h.load(header+`
target "a" {
  endpoint = "http://a"
}
workload "w" {}
matrix "m" {
  workload    = workload.w
  concurrency = [1, 4]
  repetitions = 1
  requests    = 4
  uses        = ["gpu"]
  arm "a" {
    target = target.a
  }
}
step "probe" "trace" {
  for_each             = { c1 = 1, c4 = 4 }
  during               = step.block.m["a/${each.key}/r1"]
  start_after_requests = 1
}
`), h.reg, engine.Options{StateDir: h.state, Observe: func(e engine.Event) {
		if e.Kind == "step_start" {
			mu.Lock()
			seen[e.Addr] = time.Now().Format(time.RFC3339Nano)
			mu.Unlock()
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	for _, k := range []string{"c1", "c4"} {
		c := f[`probe.trace["`+k+`"]`]
		if c.Status != engine.StatusSucceeded {
			t.Fatalf("trace %s: %+v", k, c)
		}
		b, _ := os.ReadFile(filepath.Join(h.state, c.Dir, "overlap.json"))
		if !strings.Contains(string(b), `"block": "block.m[\"a/`+k+`/r1\"]"`) || !strings.Contains(string(b), `"overlapped": true`) {
			t.Fatalf("trace %s overlap: %s", k, b)
		}
	}
}

// on_failure on a matrix overrides its blocks' defaults end to end: "stop" makes an
// arm's health failure stop the campaign (the later arm never runs); "stop_arm"
// makes a gate failure, which would stop the campaign, stop only its arm.
func TestOnFailureStopAndStopArm(t *testing.T) {
	for _, tc := range []struct {
		name, fail, onFailure string
		wantC                 engine.Status
		wantEnd               string
	}{
		{"stop", "health", "stop", engine.StatusBlocked, engine.EndHeld},
		{"stop_arm", "gate", "stop_arm", engine.StatusSucceeded, engine.EndCompleted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := armHarness(t)
			src := strings.Replace(armPlan, `fail = "health"`, `fail = "`+tc.fail+`"`, 1)
			src = strings.Replace(src, `  uses        = ["gpu"]`, `  uses        = ["gpu"]`+"\n"+`  on_failure  = "`+tc.onFailure+`"`, 1)
			sum, err := h.apply(context.Background(), h.load(src))
			if err != nil {
				t.Fatal(err)
			}
			f := h.finals()
			if r := f[`block.m["b/c1/r1"]`]; r.Status != engine.StatusFailed || string(r.Class) != tc.fail {
				t.Fatalf("b/c1/r1: %s (%s), want a %s failure", r.Status, r.Class, tc.fail)
			}
			if r := f[`block.m["b/c1/r2"]`]; r.Status != engine.StatusBlocked {
				t.Errorf("b/c1/r2: %s, want blocked", r.Status)
			}
			if r := f[`block.m["c/c1/r1"]`]; r.Status != tc.wantC {
				t.Errorf("c/c1/r1 (the next arm): %s, want %s", r.Status, tc.wantC)
			}
			if sum.Status != tc.wantEnd || f["probe.restore"].Status != engine.StatusSucceeded {
				t.Errorf("campaign %s (%s), restore %s; want %s, restored", sum.Status, sum.Reason, f["probe.restore"].Status, tc.wantEnd)
			}
		})
	}
}

// TestConditionFields: a condition reads every field the README lists. An arm whose
// blocks all succeeded but lost a request is settled, not stopped, with no failed
// block, and not clean; a block's outcome carries its request counts; and a step
// declared before the matrix waits until what its condition names has settled.
func TestConditionFields(t *testing.T) {
	h := armHarness(t)
	sum, err := h.apply(context.Background(), h.load(header+`
# Declared first: it waits for arm b to settle.
step "probe" "early" {
  condition = (outcome.arm.m.b.settled && !outcome.arm.m.b.stopped && outcome.arm.m.b.reason == "" &&
    outcome.arm.m.b.failed_blocks == 0 && outcome.arm.m.b.failed_requests == 1 && !outcome.arm.m.b.clean)
}
target "a" {
  endpoint = "http://a"
}
target "b" {
  endpoint = "http://b"
  labels   = { failed_requests = "1" }
}
workload "w" {}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  repetitions = 1
  requests    = 3
  uses        = ["gpu"]
  arm "a" {
    target = target.a
  }
  arm "b" {
    target = target.b
  }
}
step "probe" "fields" {
  condition = (outcome.block.m["b/c1/r1"].status == "succeeded" && outcome.block.m["b/c1/r1"].class == "" &&
    outcome.block.m["b/c1/r1"].disposition == "" && outcome.block.m["b/c1/r1"].requests == 3 &&
    outcome.block.m["b/c1/r1"].failed_requests == 1 && outcome.arm.m.a.clean)
}
step "probe" "b_clean" {
  condition = outcome.arm.m.b.clean
}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := h.finals()
	for _, a := range []string{"probe.early", "probe.fields"} {
		if f[a].Status != engine.StatusSucceeded {
			t.Errorf("%s: %s %s; its condition holds", a, f[a].Status, f[a].Message)
		}
	}
	if r := f["probe.b_clean"]; r.Status != engine.StatusSkipped || r.Message != "skipped: condition outcome.arm.m.b.clean is false" {
		t.Errorf("b_clean: %s %q; an arm that lost a request is not clean", r.Status, r.Message)
	}
	ran := h.probe.ran()
	if i, j := slices.Index(ran, `block.m["b/c1/r1"]`), slices.Index(ran, "probe.early"); i < 0 || j < i {
		t.Errorf("ran %v: probe.early must wait for arm b's block", ran)
	}
	if sum.Status != engine.EndCompleted {
		t.Errorf("campaign %s (%s)", sum.Status, sum.Reason)
	}
}
