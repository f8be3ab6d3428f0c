package block

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// beforeState is what the block saw before it sent anything.
type beforeState struct {
	incarnation  string
	restartCount int
	metrics      *promscrape.Snapshot
	// seen is the container's identity, checked against the records the block is
	// held to (identity.go); nil when the target has no container to inspect.
	seen *target.Seen
	// who answered the probe before the run (takeover.go).
	probe probeResult
	// checkedAt is when the checks before the run began; confirmed is set by
	// afterBlock to when the checks after it began, once they passed (a pointer:
	// beforeState travels by value, and Run reads it back for the outputs).
	checkedAt time.Time
	confirmed *time.Time
}

// idleDrain is how long the idle gate waits for requests already on the server to
// end, polling every idleDrainPoll.
const (
	idleDrain     = 10 * time.Second
	idleDrainPoll = 100 * time.Millisecond
)

// gateList flattens the gates attribute (a list of gate objects).
func gateList(v cty.Value) []cty.Value {
	if v == cty.NilVal || v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	var out []cty.Value
	for it := v.ElementIterator(); it.Next(); {
		_, g := it.Element()
		out = append(out, g)
	}
	return out
}

// checkGates runs every gate before the block and writes gates.json. Before any
// declared gate, and whatever the gates say, the target's container is held to its
// records: it must run, not OOM-killed, and be the container, image and incarnation
// that the arm's deploy, identity or restore step and the previous block on the same
// endpoint recorded, with no resource error since (class identity, oom or restart).
// A failed declared check is the stop-class failure "gate".
func checkGates(ctx context.Context, sc *engine.StepContext, t target.Target, gates []cty.Value) (beforeState, *engine.Result) {
	st := beforeState{confirmed: new(time.Time)}
	type check struct {
		Gate   string `json:"gate"`
		Check  string `json:"check"`
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	}
	var checks []check
	fail := func(class engine.FailureClass, gate, name, format string, args ...any) *engine.Result {
		checks = append(checks, check{gate, name, false, fmt.Sprintf(format, args...)})
		_ = writeJSON(sc.Path("gates.json"), checks)
		r := engine.Failed(class, "gate %s: %s: %s", gate, name, fmt.Sprintf(format, args...))
		return &r
	}
	pass := func(gate, name, format string, args ...any) {
		checks = append(checks, check{gate, name, true, fmt.Sprintf(format, args...)})
	}
	idGate, idRequired := "runtime", false
	for _, g := range gates {
		if target.Bool(g, "identity") {
			idGate, idRequired = target.Str(g, "name"), true
			break
		}
	}
	// The windows in which the engine's events are read overlap rather than leave a
	// gap: this one starts before the checks below end the previous one.
	st.checkedAt = time.Now()
	setup, prev := heldRecords(sc, t.Endpoint)
	// A sim target with no container (a bare server under test) has nothing to hold,
	// unless a gate or a record says it must have one; docker and kubernetes always have one.
	id, err := inspect(ctx, t)
	switch {
	case err != nil && (t.Runtime == target.RuntimeDocker || t.Runtime == target.RuntimeKubernetes || idRequired || setup != nil || prev != nil):
		return st, fail(engine.ClassIdentity, idGate, "identity", "container %s: %v", t.Container, err)
	case err != nil:
	case id.OOMKilled:
		return st, fail(engine.ClassOOM, idGate, "identity", "container %s was OOM-killed", t.Container)
	case !id.Running():
		return st, fail(engine.ClassIdentity, idGate, "identity", "container %s is %s (exit code %d), not running: another deploy took its place, or it stopped",
			t.Container, id.Status, id.ExitCode)
	default:
		now := target.SeenNow(t, id)
		st.seen, st.incarnation, st.restartCount = &now, id.Incarnation, id.RestartCount
		compared, f := checkHeld(ctx, sc, t, now)
		if f != nil {
			return st, fail(f.class, idGate, "identity", "%s", f.message)
		}
		held := "no earlier record on this endpoint"
		if len(compared) > 0 {
			held = "the same as " + strings.Join(compared, " and ")
		}
		pass(idGate, "identity", "container %s (%.12s) running image %s, incarnation %s: %s", t.Container, id.ContainerID, id.ImageID, id.Incarnation, held)
	}
	// Who answers the endpoint: on the sim runtime, the incarnation the server names
	// must be the container's, or another server holds the port.
	st.probe = probe(ctx, t)
	if st.seen != nil && t.Runtime == target.RuntimeSim && t.IdentityHeader != "" && st.probe.Answered && st.probe.Incarnation != st.seen.Incarnation {
		return st, fail(engine.ClassIdentity, idGate, "identity", "%s is answered by incarnation %q, not by container %s (incarnation %s): another server holds the endpoint",
			t.Endpoint, st.probe.Incarnation, t.Container, st.seen.Incarnation)
	}
	for _, g := range gates {
		name := target.Str(g, "name")
		if target.Bool(g, "health") {
			hc := t
			hc.HealthTimeout = 5 * time.Second
			if err := target.WaitHealthy(ctx, hc); err != nil {
				return st, fail(engine.ClassGate, name, "health", "%v", err)
			}
			pass(name, "health", "%s%s answered 2xx", t.Endpoint, t.HealthPath)
		}
		if target.Bool(g, "idle") {
			// Requests a dead client left (an apply killed mid-block, resumed at
			// once) run until the server notices the closed connection: they are
			// given idleDrain to end before the gate fails.
			var running, waiting float64
			start := time.Now()
			for {
				snap, err := promscrape.Scrape(ctx, t.Metrics)
				if err != nil {
					return st, fail(engine.ClassGate, name, "idle", "%v", err)
				}
				var okR, okW bool
				running, okR = snap.Sum(t.RunningMetric)
				waiting, okW = snap.Sum(t.WaitingMetric)
				if !okR || !okW {
					return st, fail(engine.ClassGate, name, "idle", "metrics lack %s or %s", t.RunningMetric, t.WaitingMetric)
				}
				if running == 0 && waiting == 0 || time.Since(start) >= idleDrain || ctx.Err() != nil {
					break
				}
				select {
				case <-ctx.Done():
				case <-time.After(idleDrainPoll):
				}
			}
			if running != 0 || waiting != 0 {
				return st, fail(engine.ClassGate, name, "idle", "%g running and %g waiting requests before the block (still after %s)", running, waiting, time.Since(start).Round(time.Millisecond))
			}
			pass(name, "idle", "0 running, 0 waiting")
		}
	}
	if len(checks) > 0 {
		_ = writeJSON(sc.Path("gates.json"), checks)
	}
	return st, nil
}

// inspect returns the identity of the target's container, bounded.
func inspect(ctx context.Context, t target.Target) (docker.Identity, error) {
	ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	return target.Inspect(ictx, t)
}

// afterBlock scrapes native metrics, computes counter deltas, and checks that the
// container was not restarted, stopped or OOM-killed during the block, that the stack
// that answered is the one the block was held to (takeover.go), and that the target
// drained.
func afterBlock(sc *engine.StepContext, t target.Target, before beforeState) *engine.Result {
	ctx := context.WithoutCancel(context.Background())
	var snap *promscrape.Snapshot
	var err error
	// A server updates its gauges a moment after the last stream closes; give it a
	// short, bounded time to drain before calling it undrained.
	deadline := time.Now().Add(3 * time.Second)
	for {
		snap, err = promscrape.Scrape(ctx, t.Metrics)
		if err != nil || time.Now().After(deadline) {
			break
		}
		r, _ := snap.Sum(t.RunningMetric)
		w, _ := snap.Sum(t.WaitingMetric)
		if r == 0 && w == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err == nil {
		_ = keepScrape(sc, "native-after.prom", snap.Raw)
		if before.metrics != nil {
			_ = writeJSON(sc.Path("native-deltas.json"), t.Native.Delta(before.metrics, snap))
		}
	}
	// The container first (the more specific class), then who answered the requests.
	// checked is taken first, so the next block's event window overlaps this one's.
	checked := time.Now()
	runtimeFailure := runtimeAfter(t, before, err != nil)
	takeover := checkTakeover(sc, t, before, snap)
	switch {
	case runtimeFailure != nil && takeover != nil:
		runtimeFailure.Message += "; " + takeover.Message
		return runtimeFailure
	case runtimeFailure != nil:
		return runtimeFailure
	case takeover != nil:
		return takeover
	case before.seen != nil:
		*before.confirmed = checked
	}
	if err != nil {
		sc.Log.Warn().Err(err).Msg("native metrics unavailable after the block")
		return nil
	}
	running, _ := snap.Sum(t.RunningMetric)
	waiting, _ := snap.Sum(t.WaitingMetric)
	if running != 0 || waiting != 0 {
		r := engine.Failed(engine.ClassUndrained, "%g running and %g waiting requests remained after the block", running, waiting)
		return &r
	}
	return nil
}

// runtimeAfter compares the container after the block with the one before: on the sim
// runtime a container that is gone or stopped is "identity", an OOM kill "oom", a new
// incarnation "restart"; docker is dockerAfter's.
func runtimeAfter(t target.Target, before beforeState, unreachable bool) *engine.Result {
	if before.incarnation == "" {
		return nil
	}
	if t.Runtime == target.RuntimeDocker || t.Runtime == target.RuntimeKubernetes {
		return dockerAfter(t, before, unreachable)
	}
	info, err := target.SimInspect(t)
	var r engine.Result
	switch {
	case err != nil:
		r = engine.Failed(engine.ClassIdentity, "container %s disappeared during the block: %v", t.Container, err)
	case info.OOMKilled:
		r = engine.Failed(engine.ClassOOM, "container %s was OOM-killed during the block", t.Container)
	case info.Incarnation != before.incarnation:
		r = engine.Failed(engine.ClassRestart, "container %s restarted during the block (incarnation %s, was %s)", t.Container, info.Incarnation, before.incarnation)
	case info.Status != sim.StatusRunning:
		r = engine.Failed(engine.ClassIdentity, "container %s stopped during the block: %s with exit code %d (incarnation %s ended)", t.Container, info.Status, info.ExitCode, before.incarnation)
	default:
		return nil
	}
	return &r
}

// dockerAfter compares a docker or kubernetes target's identity after a block with
// the one before:
// an OOM kill is "oom"; a new incarnation or a higher restart count is "restart"; a
// container that is gone or no longer running is "identity", as on the sim runtime;
// the runtime's events during the block count too (runtimeEvents). When the server stopped
// answering (unreachable), the engine may not have recorded the container's death
// yet: it is inspected again for a few seconds before it is believed unchanged.
func dockerAfter(t target.Target, before beforeState, unreachable bool) *engine.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	id, err := target.Inspect(ctx, t)
	for settle := time.Now().Add(3 * time.Second); unreachable && err == nil && id.Running() && !id.OOMKilled &&
		id.Incarnation == before.incarnation && time.Now().Before(settle); {
		time.Sleep(100 * time.Millisecond)
		id, err = target.Inspect(ctx, t)
	}
	var r engine.Result
	switch {
	case err != nil:
		r = engine.Failed(engine.ClassIdentity, "container %s cannot be inspected after the block: %v", t.Container, err)
	case id.OOMKilled:
		r = engine.Failed(engine.ClassOOM, "container %s was OOM-killed during the block (exit code %d)", t.Container, id.ExitCode)
	case id.Incarnation == "" && !id.Running():
		// kubernetes: no live pod is left, so nothing restarted; the Deployment stopped.
		r = engine.Failed(engine.ClassIdentity, "container %s stopped during the block: %s (incarnation %s ended)", t.Container, id.Status, before.incarnation)
	case id.Incarnation != before.incarnation:
		r = engine.Failed(engine.ClassRestart, "container %s restarted during the block (incarnation %s, was %s)", t.Container, id.Incarnation, before.incarnation)
	case id.RestartCount != before.restartCount:
		r = engine.Failed(engine.ClassRestart, "container %s restarted during the block (restart count %d, was %d)", t.Container, id.RestartCount, before.restartCount)
	case !id.Running():
		r = engine.Failed(engine.ClassIdentity, "container %s stopped during the block: %s with exit code %d (incarnation %s ended)", t.Container, id.Status, id.ExitCode, before.incarnation)
	default:
		if f := runtimeEvents(ctx, t, before.incarnation, before.checkedAt, "during the block"); f != nil {
			r = engine.Failed(f.class, "%s", f.message)
			return &r
		}
		return nil
	}
	r.Message += runtimeEventNote(ctx, t, before.incarnation, before.checkedAt)
	return &r
}
