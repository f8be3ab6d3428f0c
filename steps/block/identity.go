package block

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Identity held end to end. Before every block, the container serving the target must
// be the one its arm's deploy, identity or restore step recorded, and the one the
// previous block on the same endpoint saw: same container ID, image ID and
// incarnation. The records come from engine.StepContext.History, matched by endpoint;
// a block records what it saw in its outputs, so the next block is held to it.

// identityOutputs are the outputs a block adds to say what it measured.
var identityOutputs = map[string]cty.Type{
	"container_id": cty.String,
	"image_id":     cty.String,
	"incarnation":  cty.String,
	"endpoint":     cty.String,
	// checked_at is when the block last confirmed the identity (after its run): the
	// start of the window in which the next block looks for resource errors.
	"checked_at": cty.String,
}

// held is one record a block is held to.
type held struct {
	addr      string
	seen      target.Seen
	checkedAt time.Time // when that step last saw the identity; zero if unknown
}

// setupTypes are the step types that put a target in place or vouch for it.
var setupTypes = map[string]bool{"deploy": true, "identity": true, "restore": true}

// heldRecords returns the latest deploy, identity or restore record on the target's
// endpoint, and the latest block record after it. A block counts if it succeeded or
// failed only for request-level reasons (class record): it saw the same identity
// before and after its run. A later setup record supersedes earlier blocks.
func heldRecords(sc *engine.StepContext, endpoint string) (setup, prev *held) {
	if sc.History == nil {
		return nil, nil
	}
	for _, e := range sc.History() {
		block := e.Type == "block"
		if !setupTypes[e.Type] && !block {
			continue
		}
		if e.Status != engine.StatusSucceeded && !(block && e.Status == engine.StatusFailed && e.Class == engine.ClassRecord) {
			continue
		}
		seen, ok := target.SeenOf(e.Outputs)
		if !ok || seen.Endpoint != strings.TrimRight(endpoint, "/") {
			continue
		}
		h := &held{addr: fmt.Sprintf("%s (attempt %d)", e.Addr, e.Attempt), seen: seen, checkedAt: timeAttr(e.Outputs, "checked_at")}
		if h.checkedAt.IsZero() {
			h.checkedAt = timeAttr(e.Outputs, "started_at")
		}
		if block {
			prev = h
		} else {
			setup, prev = h, nil
		}
	}
	return setup, prev
}

func timeAttr(v cty.Value, name string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, target.Str(v, name))
	return t
}

// identityFinding is one thing that says the target is not what was measured.
type identityFinding struct {
	class   engine.FailureClass
	message string
}

// checkHeld compares the identity now with the records the block is held to, and
// looks for resource errors (the engine's oom, die and kill events on docker) since
// the latest of them. It returns the records' addresses for the gate's evidence.
func checkHeld(ctx context.Context, sc *engine.StepContext, t target.Target, now target.Seen) (compared []string, f *identityFinding) {
	setup, prev := heldRecords(sc, t.Endpoint)
	latest := setup
	if prev != nil {
		latest = prev
	}
	// The previous block first: a change since it is the most recent one, and the
	// one a restart between blocks shows as.
	for _, h := range []*held{prev, setup} {
		if h == nil {
			continue
		}
		compared = append(compared, h.addr)
		if ch := h.seen.Changes(now); len(ch) > 0 {
			msg := fmt.Sprintf("container %s is not the one %s recorded: %s", t.Container, h.addr, strings.Join(ch, "; "))
			msg += runtimeEventNote(ctx, t, h.seen.Incarnation, h.checkedAt)
			return compared, &identityFinding{engine.ClassIdentity, msg}
		}
	}
	// Events since the latest record's check. On kubernetes only a block's: before
	// the first block, a setup step's only time is its pods' earliest start, and what
	// the cluster reported before the setup step recorded those pods (a crash during
	// the rollout) is not news about them.
	if t.Runtime == target.RuntimeKubernetes {
		latest = prev
	}
	if latest != nil && !latest.checkedAt.IsZero() {
		if f := runtimeEvents(ctx, t, latest.seen.Incarnation, latest.checkedAt, "since "+latest.addr); f != nil {
			return compared, f
		}
	}
	return compared, nil
}

// runtimeEvents is what the runtime reported about the target's container (docker:
// the engine's events) or pods (kubernetes: the cluster's events, for the pods of
// incarnation) since a moment, as a finding; the sim runtime reports none. Inspect
// cannot see an OOM kill of a process inside a container that runs on, nor a signal
// sent to it, nor why a pod went away: events can.
func runtimeEvents(ctx context.Context, t target.Target, incarnation string, since time.Time, window string) *identityFinding {
	switch t.Runtime {
	case target.RuntimeDocker:
		return dockerEvents(ctx, t, since, window)
	case target.RuntimeKubernetes:
		return kubeEvents(ctx, t, incarnation, since, window)
	}
	return nil
}

// dockerEvents turns the engine's resource events on the target's container in a
// window into a finding: an OOM kill is "oom", a death "restart", a signal "identity".
func dockerEvents(ctx context.Context, t target.Target, since time.Time, window string) *identityFinding {
	c, err := target.Docker(ctx, t)
	if err != nil {
		return &identityFinding{engine.ClassIdentity, err.Error()}
	}
	evs, err := c.ResourceEvents(ctx, t.Container, since, time.Now())
	if err != nil {
		return &identityFinding{engine.ClassIdentity, fmt.Sprintf("cannot read the engine's events for container %s: %v", t.Container, err)}
	}
	return dockerFinding(evs, t.Container, window)
}

// dockerFinding is the gravest of a container's engine events, oom before die
// before kill, as a finding; nil when there are none.
func dockerFinding(evs []docker.Event, container, window string) *identityFinding {
	for _, class := range []engine.FailureClass{engine.ClassOOM, engine.ClassRestart, engine.ClassIdentity} {
		for _, e := range evs {
			if eventClass(e.Action) == class {
				return &identityFinding{class, fmt.Sprintf("the engine reported %s on container %s at %s (%s) %s",
					e.Action, container, e.At.Format(time.RFC3339Nano), e.Detail, window)}
			}
		}
	}
	return nil
}

// kubeEvents turns what the cluster reported about the pods of an incarnation since a
// moment into a finding: a pod whose containers were stopped, that was evicted,
// preempted or crash-looping stopped serving ("restart"). Events that cannot be read
// are a finding too ("identity", as on docker): the check would otherwise be off
// without anyone knowing.
func kubeEvents(ctx context.Context, t target.Target, incarnation string, since time.Time, window string) *identityFinding {
	evs, err := kubePodEvents(ctx, t, incarnation, since)
	if err != nil {
		return &identityFinding{engine.ClassIdentity, fmt.Sprintf("cannot read the cluster's events for the pods of %s (rigor needs to list events in the namespace): %v", t.Container, err)}
	}
	var bad []string
	for _, e := range evs {
		if e.Disruptive() {
			bad = append(bad, e.String())
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return &identityFinding{engine.ClassRestart, fmt.Sprintf("the cluster reported %s %s", strings.Join(bad, "; "), window)}
}

// kubePodEvents reads the cluster's events; tests replace it.
var kubePodEvents = target.KubePodEvents

// runtimeEventNote is what the runtime reported about an incarnation since a
// moment, as a clause to add to a failure its inspection found; "" where the
// inspection already says it all (docker, sim). On Kubernetes it is the events of
// the pods: why a pod went away, which statuses of its replacement cannot say. The
// kubelet posts its events a moment after it acts (seen on the test cluster: a
// deleted pod's Killing came after its replacement was running), so it waits up to
// eventsSettle for one.
func runtimeEventNote(ctx context.Context, t target.Target, incarnation string, since time.Time) string {
	if t.Runtime != target.RuntimeKubernetes {
		return ""
	}
	deadline := time.Now().Add(eventsSettle)
	for {
		evs, err := kubePodEvents(ctx, t, incarnation, since)
		if err != nil {
			return fmt.Sprintf("; the cluster's events could not be read: %v", err)
		}
		var said []string
		for _, e := range evs {
			if e.Type == "Warning" || e.Disruptive() {
				said = append(said, e.String())
			}
		}
		if len(said) > 0 {
			return "; the cluster reported " + strings.Join(said, "; ")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return ""
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// eventsSettle bounds the wait for the events that explain a failure.
const eventsSettle = 5 * time.Second

func eventClass(action string) engine.FailureClass {
	switch action {
	case "oom":
		return engine.ClassOOM
	case "die":
		return engine.ClassRestart
	}
	return engine.ClassIdentity
}

// withIdentity adds what the block saw to its outputs: the identity confirmed before
// and after the run (empty when the target has no container the block could inspect).
func withIdentity(outputs cty.Value, before beforeState) cty.Value {
	m := outputs.AsValueMap()
	for k := range identityOutputs {
		m[k] = cty.StringVal("")
	}
	if s := before.seen; s != nil && before.confirmed != nil && !before.confirmed.IsZero() {
		m["container_id"], m["image_id"], m["incarnation"] = cty.StringVal(s.ContainerID), cty.StringVal(s.ImageID), cty.StringVal(s.Incarnation)
		m["endpoint"] = cty.StringVal(s.Endpoint)
		m["checked_at"] = cty.StringVal(before.confirmed.UTC().Format(time.RFC3339Nano))
	}
	return cty.ObjectVal(m)
}

func mergeTypes(a, b map[string]cty.Type) map[string]cty.Type {
	for k, v := range b {
		a[k] = v
	}
	return a
}
