package kube

import (
	"context"
	"fmt"
	"k8s.io/client-go/util/retry"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// pollEvery is how often a wait re-reads the Deployment and its pods.
const pollEvery = 250 * time.Millisecond

// Occupants lists the other Deployments and StatefulSets of the namespace that want
// pods serving port (a container port or host port of their pod template),
// Deployments first, each kind in name order: what a deploy takes out of service and
// a restore stops.
func (c *Cluster) Occupants(ctx context.Context, port int, except Ref) ([]Workload, error) {
	all, err := c.list(ctx)
	if err != nil {
		return nil, err
	}
	var out []Workload
	for _, w := range all {
		if w.Ref() == (Ref{Kind: except.kind(), Name: except.Name}) || (w.Replicas() == 0 && w.statusReplicas() == 0) {
			continue
		}
		if Serves(w.Template().Spec, port) {
			out = append(out, w)
		}
	}
	return out, nil
}

// Serves reports whether a pod template declares port as a container or host port.
func Serves(spec corev1.PodSpec, port int) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if int(p.ContainerPort) == port || int(p.HostPort) == port {
				return true
			}
		}
	}
	return false
}

// Scale sets a workload's replicas and waits until exactly that many of its pods
// live (to 0: until its last pod is gone, when it has stopped serving).
func (c *Cluster) Scale(ctx context.Context, r Ref, replicas int32) error {
	patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(int(replicas)) + `}}`)
	if err := c.patch(ctx, r, patch); err != nil {
		return fmt.Errorf("scale %s to %d on %s: %w", c.Named(r), replicas, c.Server, err)
	}
	if replicas != 0 {
		return nil
	}
	w, err := c.Get(ctx, r) // for its selector, which scaling does not change
	if err != nil {
		return err
	}
	for {
		pods, err := c.Pods(ctx, w)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d pods still there when scaled to 0: %w", c.Named(r), len(pods), ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// SetImage points the named container (or the first when container is "") at image
// and sets replicas. It returns the updated workload.
func (c *Cluster) SetImage(ctx context.Context, r Ref, container, image string, replicas int32) (Workload, error) {
	var u Workload
	// The controller writes the object's status too: an update from a copy it has
	// since changed conflicts, and is made again on a fresh read (the wrapped error
	// still reads as a conflict).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w, err := c.Get(ctx, r)
		if err != nil {
			return err
		}
		if image != "" {
			spec := &w.Template().Spec
			i, err := ContainerIndex(*spec, container)
			if err != nil {
				return fmt.Errorf("%s: %w", c.Named(r), err)
			}
			spec.Containers[i].Image = image
		}
		w.setReplicas(replicas)
		if u, err = c.update(ctx, w); err != nil {
			return fmt.Errorf("update %s on %s: %w", c.Named(r), c.Server, err)
		}
		return nil
	})
	return u, err
}

// ContainerIndex is the index of the named container in a pod template, the first
// when name is "".
func ContainerIndex(spec corev1.PodSpec, name string) (int, error) {
	if len(spec.Containers) == 0 {
		return 0, fmt.Errorf("the pod template has no container")
	}
	if name == "" {
		return 0, nil
	}
	var names []string
	for i, c := range spec.Containers {
		if c.Name == name {
			return i, nil
		}
		names = append(names, c.Name)
	}
	return 0, fmt.Errorf("no container %q in the pod template (it has %s)", name, strings.Join(names, ", "))
}

// RolloutError is a rollout that cannot complete: a container that was OOM-killed or
// keeps crashing will not become ready by waiting.
type RolloutError struct {
	Workload  string // "deployment NAMESPACE/NAME" (Cluster.Named)
	Pod       string
	Container string
	Reason    string
	ExitCode  int
}

func (e *RolloutError) Error() string {
	return fmt.Sprintf("%s: pod %s container %s: %s (exit code %d)", e.Workload, e.Pod, e.Container, e.Reason, e.ExitCode)
}

// OOM reports whether the container was OOM-killed.
func (e *RolloutError) OOM() bool { return e.Reason == "OOMKilled" }

// Stuck returns the first container of pods that was OOM-killed or is in
// CrashLoopBackOff, as a *RolloutError, or nil.
func Stuck(workload string, pods []Pod) *RolloutError {
	for _, p := range pods {
		if p.Deleting {
			continue
		}
		for _, c := range p.Containers {
			switch {
			case c.LastReason == "OOMKilled":
				return &RolloutError{workload, p.Name, c.Name, "OOMKilled", c.ExitCode}
			case c.State == "waiting: CrashLoopBackOff", c.State == "waiting: ErrImageNeverPull", c.State == "waiting: InvalidImageName":
				return &RolloutError{workload, p.Name, c.Name, strings.TrimPrefix(c.State, "waiting: "), c.ExitCode}
			}
		}
	}
	return nil
}

// WaitRollout waits until the workload's controller has seen its latest spec, every
// wanted pod is of that spec, running and ready, and no pod of an older spec is left;
// it returns the pods then. A container that is OOM-killed or cannot start ends the
// wait at once with a *RolloutError; ctx bounds it otherwise.
//
// A StatefulSet does not replace a pod of an older revision that never became ready:
// its controller waits for that pod forever, so a template put back after a broken
// rollout would never reach it (Kubernetes' "forced rollback"). The wait deletes
// such a pod, once its controller has seen the latest spec, so the controller makes
// it again from the latest template.
func (c *Cluster) WaitRollout(ctx context.Context, r Ref) ([]Pod, error) {
	var last string
	deleted := map[string]bool{}
	for {
		w, err := c.Get(ctx, r)
		if err != nil {
			return nil, err
		}
		pods, err := c.Pods(ctx, w)
		if err != nil {
			return nil, err
		}
		// Only pods of the latest template speak for this rollout: a pod of a replaced
		// template that could not start (an image that was never there) is on its way
		// out and says nothing about the spec being rolled out.
		current, err := c.currentTemplate(ctx, w)
		if err != nil {
			return nil, err
		}
		var latest []Pod
		for _, p := range pods {
			if current != "" && p.Template == current {
				latest = append(latest, p)
			} else if current != "" && w.StatefulSet != nil && !p.Ready && !p.Deleting && !deleted[p.UID] {
				if err := c.api.CoreV1().Pods(c.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
					return pods, fmt.Errorf("%s: delete pod %s of an older revision that is not ready: %w", c.Named(r), p.Name, err)
				}
				deleted[p.UID] = true
			}
		}
		if e := Stuck(c.Named(r), latest); e != nil {
			return pods, e
		}
		want := w.Replicas()
		id := IdentityOf(w, pods)
		seen, done := w.rolledOut(want)
		done = done && len(pods) == int(want) && len(latest) == int(want) && id.Status == "running" && id.Health == "healthy"
		if want == 0 {
			done = seen && len(pods) == 0
		}
		if done {
			return pods, nil
		}
		last = fmt.Sprintf("%s, %d pods (%s)", w.rolloutStatus(want), len(pods), id.Status)
		select {
		case <-ctx.Done():
			return pods, fmt.Errorf("%s on %s: %w: %s: %v", c.Named(r), c.Server, ErrRolloutTimedOut, last, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// rolledOut reports whether the controller has seen the workload's latest spec, and
// whether its status counts want pods of that spec, all ready.
func (w Workload) rolledOut(want int32) (seen, done bool) {
	if d := w.Deployment; d != nil {
		s := d.Status
		seen = s.ObservedGeneration >= d.Generation
		return seen, seen && s.UpdatedReplicas == want && s.Replicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
	}
	st := w.StatefulSet
	s := st.Status
	seen = s.ObservedGeneration >= st.Generation
	return seen, seen && s.UpdatedReplicas == want && s.Replicas == want && s.ReadyReplicas == want && s.AvailableReplicas == want
}

// rolloutStatus says where a rollout stands, for the error when it times out.
func (w Workload) rolloutStatus(want int32) string {
	m := w.Meta()
	var observed int64
	var updated, ready int32
	if d := w.Deployment; d != nil {
		observed, updated, ready = d.Status.ObservedGeneration, d.Status.UpdatedReplicas, d.Status.ReadyReplicas
	} else {
		observed, updated, ready = w.StatefulSet.Status.ObservedGeneration, w.StatefulSet.Status.UpdatedReplicas, w.StatefulSet.Status.ReadyReplicas
	}
	return fmt.Sprintf("generation %d observed %d, %d updated, %d ready of %d wanted", m.Generation, observed, updated, ready, want)
}

// revisionKey is the annotation through which the Deployment controller tells which
// ReplicaSet holds a Deployment's latest template.
const revisionKey = "deployment.kubernetes.io/revision"

// currentTemplate is the revision of w's latest pod template as its pods are
// labelled (Pod.Template), or "" while the controller has not caught up with w's
// spec: a StatefulSet's status names it (updateRevision); a Deployment's is the
// pod-template-hash of the ReplicaSet holding its latest revision.
func (c *Cluster) currentTemplate(ctx context.Context, w Workload) (string, error) {
	if st := w.StatefulSet; st != nil {
		if st.Status.ObservedGeneration < st.Generation {
			return "", nil
		}
		return st.Status.UpdateRevision, nil
	}
	d := w.Deployment
	if d.Status.ObservedGeneration < d.Generation || d.Annotations[revisionKey] == "" {
		return "", nil
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return "", fmt.Errorf("deployment %s/%s: selector: %w", c.Namespace, d.Name, err)
	}
	list, err := c.api.AppsV1().ReplicaSets(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return "", fmt.Errorf("list replicasets of deployment %s/%s on %s: %w", c.Namespace, d.Name, c.Server, err)
	}
	for _, rs := range list.Items {
		if metav1.IsControlledBy(&rs, d) && rs.Annotations[revisionKey] == d.Annotations[revisionKey] {
			return rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey], nil
		}
	}
	return "", nil
}
