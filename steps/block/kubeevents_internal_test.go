package block

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Between two blocks on a kubernetes target whose pods' statuses did not change,
// what the cluster reported about those pods since the previous block's check still
// counts: a Killing fails the next block as restart, events that cannot be read as
// identity. Before the first block (only a setup record to hold to) they are not
// read: the setup step's pods may have restarted before it recorded them.
func TestKubeEventsBetweenBlocks(t *testing.T) {
	const endpoint = "http://127.0.0.1:19210"
	seen := target.Seen{ContainerID: "containerd://c1", ImageID: "sha256:aa", Incarnation: "uid-1/0", Endpoint: endpoint}
	out := func(checked time.Time) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"container_id": cty.StringVal(seen.ContainerID), "image_id": cty.StringVal(seen.ImageID),
			"incarnation": cty.StringVal(seen.Incarnation), "endpoint": cty.StringVal(endpoint),
			"checked_at": cty.StringVal(checked.UTC().Format(time.RFC3339Nano)),
		})
	}
	checked := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	deploy := engine.Ended{Addr: "deploy.cand", Type: "deploy", Attempt: 1, Status: engine.StatusSucceeded, Outputs: out(checked.Add(-time.Hour))}
	prevBlock := engine.Ended{Addr: `block.m["cand/c1/r1"]`, Type: "block", Attempt: 1, Status: engine.StatusSucceeded, Outputs: out(checked)}
	tgt := target.Target{Name: "cand", Container: "sim-cand", Runtime: target.RuntimeKubernetes, Endpoint: endpoint}

	var asked []string
	var events []kube.Event
	var readErr error
	kubePodEvents = func(_ context.Context, _ target.Target, incarnation string, since time.Time) ([]kube.Event, error) {
		asked = append(asked, incarnation+" since "+since.Format(time.RFC3339))
		return events, readErr
	}
	defer func() { kubePodEvents = target.KubePodEvents }()
	check := func(history ...engine.Ended) *identityFinding {
		asked = nil
		sc := &engine.StepContext{History: func() []engine.Ended { return history }}
		_, f := checkHeld(context.Background(), sc, tgt, seen)
		return f
	}

	events = []kube.Event{{Pod: "sim-cand-0", Type: "Normal", Reason: "Killing", Message: "Stopping container sim", At: checked.Add(time.Second)}}
	if f := check(deploy); f != nil || len(asked) != 0 {
		t.Fatalf("first block: finding %+v, events read %v; want none read", f, asked)
	}
	f := check(deploy, prevBlock)
	if f == nil || f.class != engine.ClassRestart || !strings.Contains(f.message, "the cluster reported Killing on pod sim-cand-0 at 2026-11-30T14:00:01Z: Stopping container sim since block.m[\"cand/c1/r1\"] (attempt 1)") {
		t.Fatalf("a Killing since the previous block: %+v", f)
	}
	if len(asked) != 1 || asked[0] != "uid-1/0 since 2026-11-30T14:00:00Z" {
		t.Errorf("events read for %v; want the previous block's pods since its check", asked)
	}
	events = []kube.Event{{Pod: "sim-cand-0", Type: "Normal", Reason: "Pulled", At: checked.Add(time.Second)}}
	if f := check(deploy, prevBlock); f != nil {
		t.Errorf("a Pulled event is no disruption: %+v", f)
	}
	readErr = errors.New(`events is forbidden: User "rigor" cannot list resource "events"`)
	if f := check(deploy, prevBlock); f == nil || f.class != engine.ClassIdentity || !strings.Contains(f.message, "cannot read the cluster's events for the pods of sim-cand") || !strings.Contains(f.message, "forbidden") {
		t.Errorf("events that cannot be read: %+v; want an identity finding naming the error", f)
	}
}
