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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// pollEvery is how often a wait re-reads the Deployment and its pods.
const pollEvery = 250 * time.Millisecond

// Occupants lists the other Deployments of the namespace that want pods serving port
// (a container port or host port of their pod template), in name order: what a deploy
// takes out of service and a restore stops.
func (c *Cluster) Occupants(ctx context.Context, port int, except string) ([]appsv1.Deployment, error) {
	list, err := c.api.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deployments in %s: %w", c.Where(), err)
	}
	var out []appsv1.Deployment
	for _, d := range list.Items {
		if d.Name == except || (d.Spec.Replicas != nil && *d.Spec.Replicas == 0 && d.Status.Replicas == 0) {
			continue
		}
		if Serves(d.Spec.Template.Spec, port) {
			out = append(out, d)
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

// Scale sets a Deployment's replicas and waits until exactly that many of its pods
// live (to 0: until its last pod is gone, when it has stopped serving).
func (c *Cluster) Scale(ctx context.Context, name string, replicas int32) error {
	patch := []byte(`{"spec":{"replicas":` + strconv.Itoa(int(replicas)) + `}}`)
	if _, err := c.api.AppsV1().Deployments(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scale deployment %s/%s to %d on %s: %w", c.Namespace, name, replicas, c.Server, err)
	}
	if replicas != 0 {
		return nil
	}
	for {
		d, err := c.Deployment(ctx, name)
		if err != nil {
			return err
		}
		pods, err := c.Pods(ctx, d)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("deployment %s/%s: %d pods still there when scaled to 0: %w", c.Namespace, name, len(pods), ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// SetImage points the named container (or the first when container is "") at image
// and sets replicas. It returns the updated Deployment.
func (c *Cluster) SetImage(ctx context.Context, name, container, image string, replicas int32) (*appsv1.Deployment, error) {
	var u *appsv1.Deployment
	// The controller writes the object's status too: an update from a copy it has
	// since changed conflicts, and is made again on a fresh read (the wrapped error
	// still reads as a conflict).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d, err := c.Deployment(ctx, name)
		if err != nil {
			return err
		}
		if image != "" {
			i, err := containerIndex(d.Spec.Template.Spec, container)
			if err != nil {
				return fmt.Errorf("deployment %s/%s: %w", c.Namespace, name, err)
			}
			d.Spec.Template.Spec.Containers[i].Image = image
		}
		d.Spec.Replicas = &replicas
		if u, err = c.api.AppsV1().Deployments(c.Namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("update deployment %s/%s on %s: %w", c.Namespace, name, c.Server, err)
		}
		return nil
	})
	return u, err
}

func containerIndex(spec corev1.PodSpec, name string) (int, error) {
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
	Deployment string
	Pod        string
	Container  string
	Reason     string
	ExitCode   int
}

func (e *RolloutError) Error() string {
	return fmt.Sprintf("deployment %s: pod %s container %s: %s (exit code %d)", e.Deployment, e.Pod, e.Container, e.Reason, e.ExitCode)
}

// OOM reports whether the container was OOM-killed.
func (e *RolloutError) OOM() bool { return e.Reason == "OOMKilled" }

// Stuck returns the first container of pods that was OOM-killed or is in
// CrashLoopBackOff, as a *RolloutError, or nil.
func Stuck(deployment string, pods []Pod) *RolloutError {
	for _, p := range pods {
		if p.Deleting {
			continue
		}
		for _, c := range p.Containers {
			switch {
			case c.LastReason == "OOMKilled":
				return &RolloutError{deployment, p.Name, c.Name, "OOMKilled", c.ExitCode}
			case c.State == "waiting: CrashLoopBackOff", c.State == "waiting: ErrImageNeverPull", c.State == "waiting: InvalidImageName":
				return &RolloutError{deployment, p.Name, c.Name, strings.TrimPrefix(c.State, "waiting: "), c.ExitCode}
			}
		}
	}
	return nil
}

// WaitRollout waits until the Deployment's controller has seen its latest spec, every
// wanted pod is of that spec, running and ready, and no pod of an older spec is left;
// it returns the identity then. A container that is OOM-killed or cannot start ends
// the wait at once with a *RolloutError; ctx bounds it otherwise.
func (c *Cluster) WaitRollout(ctx context.Context, name string) ([]Pod, error) {
	var last string
	for {
		d, err := c.Deployment(ctx, name)
		if err != nil {
			return nil, err
		}
		pods, err := c.Pods(ctx, d)
		if err != nil {
			return nil, err
		}
		// Only pods of the latest template speak for this rollout: a pod of a replaced
		// ReplicaSet that could not start (an image that was never there) is on its
		// way out and says nothing about the spec being rolled out.
		current, err := c.currentTemplate(ctx, d)
		if err != nil {
			return nil, err
		}
		var latest []Pod
		for _, p := range pods {
			if current != "" && p.Template == current {
				latest = append(latest, p)
			}
		}
		if e := Stuck(fmt.Sprintf("%s/%s", c.Namespace, name), latest); e != nil {
			return pods, e
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		s := d.Status
		id := IdentityOf(d, pods)
		done := s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.Replicas == want &&
			s.ReadyReplicas == want && s.AvailableReplicas == want && len(pods) == int(want) && len(latest) == int(want) &&
			id.Status == "running" && id.Health == "healthy"
		if want == 0 {
			done = s.ObservedGeneration >= d.Generation && len(pods) == 0
		}
		if done {
			return pods, nil
		}
		last = fmt.Sprintf("generation %d observed %d, %d updated, %d ready of %d wanted, %d pods (%s)",
			d.Generation, s.ObservedGeneration, s.UpdatedReplicas, s.ReadyReplicas, want, len(pods), id.Status)
		select {
		case <-ctx.Done():
			return pods, fmt.Errorf("deployment %s/%s on %s: %w: %s: %v", c.Namespace, name, c.Server, ErrRolloutTimedOut, last, ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// revisionKey is the annotation through which the Deployment controller tells which
// ReplicaSet holds a Deployment's latest template.
const revisionKey = "deployment.kubernetes.io/revision"

// currentTemplate is the pod-template-hash of the ReplicaSet that holds d's latest
// template, or "" while the controller has not caught up with d's spec.
func (c *Cluster) currentTemplate(ctx context.Context, d *appsv1.Deployment) (string, error) {
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
