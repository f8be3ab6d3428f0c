package kube

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event is what the cluster reported about one pod: the kubelet's Killing when it
// stops a container, Evicted, Preempted, BackOff, a scheduler's FailedScheduling.
type Event struct {
	Pod     string    `json:"pod"`
	Type    string    `json:"type"` // Normal or Warning
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

func (e Event) String() string {
	return fmt.Sprintf("%s on pod %s at %s: %s", e.Reason, e.Pod, e.At.UTC().Format(time.RFC3339), e.Message)
}

// incarnationUIDs are the pod UIDs of an incarnation ("uid/restarts,...").
func incarnationUIDs(incarnation string) []string {
	var uids []string
	for _, part := range strings.Split(incarnation, ",") {
		if uid, _, ok := strings.Cut(part, "/"); ok && uid != "" {
			uids = append(uids, uid)
		}
	}
	return uids
}

// PodEvents lists the events about the pods of an incarnation (Identity.Incarnation)
// that happened at or after since, oldest first. Events carry the second they were
// last seen, so since is taken back to its second.
func (c *Cluster) PodEvents(ctx context.Context, incarnation string, since time.Time) ([]Event, error) {
	var out []Event
	for _, uid := range incarnationUIDs(incarnation) {
		list, err := c.api.CoreV1().Events(c.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.uid=" + uid})
		if err != nil {
			return nil, fmt.Errorf("list events of pod %s in %s: %w", uid, c.Where(), err)
		}
		for _, e := range list.Items {
			if string(e.InvolvedObject.UID) != uid {
				continue // a server that ignores the field selector
			}
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			if at.IsZero() {
				at = e.FirstTimestamp.Time
			}
			if at.Before(since.Truncate(time.Second)) {
				continue
			}
			out = append(out, Event{Pod: e.InvolvedObject.Name, Type: e.Type, Reason: e.Reason, Message: e.Message, At: at})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out, nil
}

// Disruptive reports whether an event says a pod stopped serving: its containers were
// stopped (Killing), it was evicted (Evicted) or preempted (Preempted, Preempting), or
// it is crash-looping (BackOff). An OOM kill is read from the container's status,
// which names it; the node's own OOM events are about the node, not a pod.
func (e Event) Disruptive() bool {
	switch e.Reason {
	case "Killing", "Evicted", "Preempted", "Preempting", "BackOff":
		return true
	}
	return false
}
