package block

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/rigor-bench/rigor/engine"
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
}

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

// checkGates runs every gate before the block and writes gates.json. Any failed
// check is the stop-class failure "gate".
func checkGates(ctx context.Context, sc *engine.StepContext, t target.Target, gates []cty.Value) (beforeState, *engine.Result) {
	var st beforeState
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
	if t.Runtime == "sim" {
		if info, err := sim.GetHost(t.Host).Inspect(t.Container); err == nil {
			st.incarnation = info.Incarnation
		}
	}
	if t.Runtime == target.RuntimeDocker {
		// The incarnation before the block is what afterBlock compares with; a target
		// that cannot be inspected now cannot be vouched for after either.
		ictx, cancel := context.WithTimeout(ctx, 15*time.Second)
		id, err := target.Inspect(ictx, t)
		cancel()
		if err != nil {
			return st, fail(engine.ClassIdentity, "runtime", "identity", "%v", err)
		}
		if id.OOMKilled {
			return st, fail(engine.ClassOOM, "runtime", "identity", "container %s was OOM-killed", t.Container)
		}
		if !id.Running() {
			return st, fail(engine.ClassIdentity, "runtime", "identity", "container %s is %s (exit code %d), not running", t.Container, id.Status, id.ExitCode)
		}
		st.incarnation, st.restartCount = id.Incarnation, id.RestartCount
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
		if target.Bool(g, "identity") && t.Runtime == "sim" {
			info, err := sim.GetHost(t.Host).Inspect(t.Container)
			if err != nil {
				return st, fail(engine.ClassIdentity, name, "identity", "container %s: %v", t.Container, err)
			}
			if info.Status != sim.StatusRunning {
				return st, fail(engine.ClassIdentity, name, "identity", "container %s is %s, not running: another deploy took its place, or it stopped", t.Container, info.Status)
			}
			if info.OOMKilled {
				return st, fail(engine.ClassOOM, name, "identity", "container %s was OOM-killed", t.Container)
			}
			pass(name, "identity", "container %s incarnation %s", t.Container, info.Incarnation)
		}
		if target.Bool(g, "identity") && t.Runtime == target.RuntimeDocker {
			pass(name, "identity", "container %s running, not OOM-killed, incarnation %s", t.Container, st.incarnation)
		}
		if target.Bool(g, "idle") {
			snap, err := promscrape.Scrape(ctx, t.Metrics)
			if err != nil {
				return st, fail(engine.ClassGate, name, "idle", "%v", err)
			}
			running, okR := snap.Sum(t.RunningMetric)
			waiting, okW := snap.Sum(t.WaitingMetric)
			if !okR || !okW {
				return st, fail(engine.ClassGate, name, "idle", "metrics lack %s or %s", t.RunningMetric, t.WaitingMetric)
			}
			if running != 0 || waiting != 0 {
				return st, fail(engine.ClassGate, name, "idle", "%g running and %g waiting requests before the block", running, waiting)
			}
			pass(name, "idle", "0 running, 0 waiting")
		}
	}
	if len(checks) > 0 {
		_ = writeJSON(sc.Path("gates.json"), checks)
	}
	return st, nil
}

// afterBlock scrapes native metrics, computes counter deltas, and checks that the
// target drained and was not restarted during the block.
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
	if t.Runtime == "sim" && before.incarnation != "" {
		info, ierr := sim.GetHost(t.Host).Inspect(t.Container)
		switch {
		case ierr != nil:
			r := engine.Failed(engine.ClassIdentity, "container %s disappeared during the block: %v", t.Container, ierr)
			return &r
		case info.OOMKilled:
			r := engine.Failed(engine.ClassOOM, "container %s was OOM-killed during the block", t.Container)
			return &r
		case info.Incarnation != before.incarnation:
			r := engine.Failed(engine.ClassRestart, "container %s restarted during the block (incarnation %s, was %s)", t.Container, info.Incarnation, before.incarnation)
			return &r
		}
	}
	if t.Runtime == target.RuntimeDocker && before.incarnation != "" {
		if r := dockerAfter(t, before, err != nil); r != nil {
			return r
		}
	}
	if err != nil {
		sc.Log.Warn().Err(err).Msg("native metrics unavailable after the block")
		return nil
	}
	_ = os.WriteFile(sc.Path("native-after.prom"), snap.Raw, 0o644)
	if before.metrics != nil {
		_ = writeJSON(sc.Path("native-deltas.json"), t.Native.Delta(before.metrics, snap))
	}
	running, _ := snap.Sum(t.RunningMetric)
	waiting, _ := snap.Sum(t.WaitingMetric)
	if running != 0 || waiting != 0 {
		r := engine.Failed(engine.ClassUndrained, "%g running and %g waiting requests remained after the block", running, waiting)
		return &r
	}
	return nil
}

// dockerAfter compares a docker target's identity after a block with the one before:
// an OOM kill is "oom"; an exit, a new incarnation or a higher restart count is
// "restart"; a container that is gone is "identity". When the server stopped
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
	case id.Incarnation != before.incarnation:
		r = engine.Failed(engine.ClassRestart, "container %s restarted during the block (incarnation %s, was %s)", t.Container, id.Incarnation, before.incarnation)
	case id.RestartCount != before.restartCount:
		r = engine.Failed(engine.ClassRestart, "container %s restarted during the block (restart count %d, was %d)", t.Container, id.RestartCount, before.restartCount)
	case !id.Running():
		r = engine.Failed(engine.ClassRestart, "container %s stopped during the block: %s with exit code %d (incarnation %s ended)", t.Container, id.Status, id.ExitCode, before.incarnation)
	default:
		return nil
	}
	return &r
}
