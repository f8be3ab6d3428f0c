package kube

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

func podEvent(name, pod, uid, typ, reason string, at time.Time) *corev1.Event {
	return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod, UID: types.UID(uid)},
		Type:           typ, Reason: reason, Message: reason + " " + pod, LastTimestamp: metav1.NewTime(at)}
}

// PodEvents reads the events of the incarnation's pods from a moment on (to its
// second, as events are stamped), oldest first, and no other pod's.
func TestPodEvents(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)
	api := fake.NewSimpleClientset(
		podEvent("e1", "inc-a", "ua", "Normal", "Started", t0.Add(-time.Minute)),
		podEvent("e2", "inc-a", "ua", "Normal", "Killing", t0.Add(2*time.Second)),
		podEvent("e3", "inc-b", "ub", "Warning", "Evicted", t0.Add(time.Second)),
		podEvent("e4", "other", "uo", "Warning", "BackOff", t0.Add(time.Second)),
	)
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	evs, err := c.PodEvents(context.Background(), "ua/0,ub/2", t0.Add(400*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range evs {
		got = append(got, e.Pod+" "+e.Reason)
	}
	if diff := cmp.Diff([]string{"inc-b Evicted", "inc-a Killing"}, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if !evs[0].Disruptive() || (Event{Reason: "Started"}).Disruptive() || (Event{Reason: "Pulled"}).Disruptive() {
		t.Error("Evicted stops a pod serving; Started and Pulled do not")
	}
	if s := evs[1].String(); s != "Killing on pod inc-a at 2026-11-30T14:00:02Z: Killing inc-a" {
		t.Errorf("event text %q", s)
	}
}
