package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
)

// Asked to hold unless the rule is known to resolve, the gate holds when the pilot's
// power cannot be estimated (here: no evidence to read); without the flag it goes on.
func TestPilotGateHoldsWhenPowerIsUnknown(t *testing.T) {
	p := &plans.Plan{Instances: []*plans.Instance{{Addr: `block.pilot["c1"]`, Meta: plans.Meta{Phase: "pilot"}}}}
	next := &plans.Instance{Addr: "deploy.candidate"}
	settled := func(string) bool { return true }
	view := &lineView{log: zerolog.Nop(), last: map[string]time.Time{}}
	state := t.TempDir() + "/no-such-state"
	if msg := pilotGate(view, p, state, true)(next, settled); !strings.HasPrefix(msg, "the minimum detectable effect was not estimated after the pilot (") ||
		!strings.HasSuffix(msg, "); --hold-unresolvable holds the campaign here, before any candidate traffic") {
		t.Errorf("with the flag: %q; want a hold that says the estimate failed", msg)
	}
	if msg := pilotGate(view, p, state, false)(next, settled); msg != "" {
		t.Errorf("without the flag: %q; want no hold", msg)
	}
}

// Without the flag, the pilot's power is told by the apply that ran the pilot; an
// apply that finds it settled already does not read the state again.
func TestPilotGateTellsOncePerPilot(t *testing.T) {
	p := &plans.Plan{Instances: []*plans.Instance{{Addr: `block.pilot["c1"]`, Meta: plans.Meta{Phase: "pilot"}}}}
	state := t.TempDir() + "/no-such-state"
	var out bytes.Buffer
	view := &lineView{log: zerolog.New(&out), last: map[string]time.Time{}}
	settled := func(string) bool { return true }
	gate := pilotGate(view, p, state, false)
	gate(p.Instances[0], settled)
	gate(&plans.Instance{Addr: "deploy.candidate"}, settled)
	if !strings.Contains(out.String(), "after the pilot: the minimum detectable effect was not estimated") {
		t.Errorf("the apply that ran the pilot logged %q; want the estimate (here, why there is none)", out.String())
	}
	out.Reset()
	pilotGate(view, p, state, false)(&plans.Instance{Addr: "deploy.candidate"}, settled)
	if out.Len() != 0 {
		t.Errorf("an apply whose pilot had settled before logged %q; want nothing", out.String())
	}
}
