package kube

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/docker"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pod is one pod of a workload as identity records it. Template is the revision of
// the workload's pod template the pod was made from: a Deployment's
// pod-template-hash, a StatefulSet's controller-revision-hash.
type Pod struct {
	Name         string      `json:"name"`
	UID          string      `json:"uid"`
	Node         string      `json:"node"`
	Phase        string      `json:"phase"`
	Ready        bool        `json:"ready"`
	Containers   []Container `json:"containers"`
	RestartCount int         `json:"restart_count"`
	StartedAt    time.Time   `json:"started_at"`
	Deleting     bool        `json:"deleting,omitempty"`
	Template     string      `json:"pod_template_hash,omitempty"`
}

// Container is one container of a pod: what it runs and how often it restarted.
type Container struct {
	Name         string `json:"name"`
	Image        string `json:"image"`    // the reference the pod names
	ImageID      string `json:"image_id"` // the digest the runtime reports
	ContainerID  string `json:"container_id"`
	RestartCount int    `json:"restart_count"`
	State        string `json:"state"` // running, waiting: <reason>, terminated: <reason>
	LastReason   string `json:"last_termination_reason,omitempty"`
	ExitCode     int    `json:"exit_code,omitempty"`
}

// Pods lists the live pods a workload selects, in name order.
func (c *Cluster) Pods(ctx context.Context, w Workload) ([]Pod, error) {
	r := w.Ref()
	sel, err := metav1.LabelSelectorAsSelector(w.selector())
	if err != nil {
		return nil, fmt.Errorf("%s: selector: %v", c.Named(r), err)
	}
	list, err := c.api.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("list pods of %s on %s: %w", c.Named(r), c.Server, err)
	}
	var out []Pod
	for _, p := range list.Items {
		out = append(out, podOf(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func podOf(p corev1.Pod) Pod {
	r := Pod{Name: p.Name, UID: string(p.UID), Node: p.Spec.NodeName, Phase: string(p.Status.Phase),
		Deleting: p.DeletionTimestamp != nil, Template: p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]}
	if r.Template == "" {
		r.Template = p.Labels[appsv1.StatefulSetRevisionLabel]
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			r.Ready = c.Status == corev1.ConditionTrue
		}
	}
	spec := map[string]string{}
	for _, c := range p.Spec.Containers {
		spec[c.Name] = c.Image
	}
	for _, s := range p.Status.ContainerStatuses {
		c := Container{Name: s.Name, Image: spec[s.Name], ImageID: s.ImageID, ContainerID: s.ContainerID, RestartCount: int(s.RestartCount)}
		switch {
		case s.State.Running != nil:
			c.State = "running"
			if t := s.State.Running.StartedAt.Time; r.StartedAt.IsZero() || t.Before(r.StartedAt) {
				r.StartedAt = t
			}
		case s.State.Waiting != nil:
			c.State = "waiting: " + s.State.Waiting.Reason
		case s.State.Terminated != nil:
			c.State = "terminated: " + s.State.Terminated.Reason
			c.ExitCode = int(s.State.Terminated.ExitCode)
			c.LastReason = s.State.Terminated.Reason
		}
		if t := s.LastTerminationState.Terminated; t != nil && c.LastReason == "" {
			c.LastReason = t.Reason
			c.ExitCode = int(t.ExitCode)
		}
		r.RestartCount += c.RestartCount
		r.Containers = append(r.Containers, c)
	}
	sort.Slice(r.Containers, func(i, j int) bool { return r.Containers[i].Name < r.Containers[j].Name })
	return r
}

// Digest is the "sha256:…" part of an imageID or image reference ("" when it names
// none): the runtime reports either an image ID or repo@sha256:….
func Digest(ref string) string {
	if i := strings.LastIndex(ref, "sha256:"); i >= 0 {
		return ref[i:]
	}
	return ""
}

// Inspect returns a workload's identity record and its pods. Status is "running"
// when the Deployment wants at least one pod and exactly that many live pods run
// with every container running and ready; otherwise it says what is missing.
func (c *Cluster) Inspect(ctx context.Context, r Ref) (docker.Identity, []Pod, error) {
	w, err := c.Get(ctx, r)
	if err != nil {
		return docker.Identity{}, nil, err
	}
	pods, err := c.Pods(ctx, w)
	if err != nil {
		return docker.Identity{}, nil, err
	}
	return IdentityOf(w, pods), pods, nil
}

// IdentityOf fills the shared identity record from a workload and its pods.
func IdentityOf(w Workload, pods []Pod) docker.Identity {
	m := w.Meta()
	id := docker.Identity{Name: m.Name, Created: m.CreationTimestamp.Time, Health: "none"}
	var images, imageIDs, containers, inc []string
	for _, c := range w.Template().Spec.Containers {
		images = append(images, c.Image)
	}
	want := w.Replicas()
	live, running, ready := 0, 0, 0
	for _, p := range pods {
		if p.Deleting {
			continue
		}
		live++
		allRunning := len(p.Containers) > 0
		for _, c := range p.Containers {
			if d := Digest(c.ImageID); d != "" && !slices.Contains(imageIDs, d) {
				imageIDs = append(imageIDs, d)
			}
			if c.ContainerID != "" {
				containers = append(containers, c.ContainerID)
			}
			if c.State != "running" {
				allRunning = false
			}
			if c.LastReason == "OOMKilled" {
				id.OOMKilled = true
			}
			if c.ExitCode != 0 && id.ExitCode == 0 {
				id.ExitCode = c.ExitCode
			}
		}
		if allRunning {
			running++
		}
		if p.Ready {
			ready++
		}
		id.RestartCount += p.RestartCount
		inc = append(inc, fmt.Sprintf("%s/%d", p.UID, p.RestartCount))
		if !p.StartedAt.IsZero() && (id.StartedAt.IsZero() || p.StartedAt.Before(id.StartedAt)) {
			id.StartedAt = p.StartedAt
		}
	}
	sort.Strings(imageIDs)
	sort.Strings(containers)
	sort.Strings(inc)
	id.Image = strings.Join(images, ",")
	id.ImageID = strings.Join(imageIDs, ",")
	id.ContainerID = strings.Join(containers, ",")
	id.Incarnation = strings.Join(inc, ",")
	switch {
	case want == 0 && live == 0:
		id.Status = "scaled to 0"
	case live == 0:
		id.Status = "no pods"
	case running == live && live == int(want):
		id.Status = "running"
	default:
		id.Status = fmt.Sprintf("%d of %d pods running (%d live)", running, want, live)
	}
	if live > 0 {
		id.Health = "unhealthy"
		if ready == live {
			id.Health = "healthy"
		}
	}
	return id
}
