package kube

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The kinds of workload a kubernetes target runs as.
const (
	KindDeployment  = "Deployment"
	KindStatefulSet = "StatefulSet"
)

// Ref names a workload of the cluster's namespace: its kind and name.
type Ref struct {
	Kind string // KindDeployment or KindStatefulSet; "" reads as KindDeployment
	Name string
}

// Deployment names a Deployment.
func Deployment(name string) Ref { return Ref{Kind: KindDeployment, Name: name} }

// StatefulSet names a StatefulSet.
func StatefulSet(name string) Ref { return Ref{Kind: KindStatefulSet, Name: name} }

func (r Ref) kind() string {
	if r.Kind == "" {
		return KindDeployment
	}
	return r.Kind
}

// String is "deployment NAME" or "statefulset NAME", as messages name it.
func (r Ref) String() string { return strings.ToLower(r.kind()) + " " + r.Name }

// Workload is a Deployment or a StatefulSet as the API server returned it; exactly
// one of the two is set. Both keep a pod template, a selector and replicas, which
// is all that identity, deploy and restore read or change.
type Workload struct {
	Deployment  *appsv1.Deployment
	StatefulSet *appsv1.StatefulSet
}

// Ref names the workload.
func (w Workload) Ref() Ref {
	if w.StatefulSet != nil {
		return StatefulSet(w.StatefulSet.Name)
	}
	return Deployment(w.Deployment.Name)
}

// Meta is the workload's object metadata.
func (w Workload) Meta() *metav1.ObjectMeta {
	if w.StatefulSet != nil {
		return &w.StatefulSet.ObjectMeta
	}
	return &w.Deployment.ObjectMeta
}

// Template is the workload's pod template.
func (w Workload) Template() *corev1.PodTemplateSpec {
	if w.StatefulSet != nil {
		return &w.StatefulSet.Spec.Template
	}
	return &w.Deployment.Spec.Template
}

func (w Workload) selector() *metav1.LabelSelector {
	if w.StatefulSet != nil {
		return w.StatefulSet.Spec.Selector
	}
	return w.Deployment.Spec.Selector
}

// Replicas is the number of pods the workload wants (the API's default, 1, when
// unset).
func (w Workload) Replicas() int32 {
	var r *int32
	if w.StatefulSet != nil {
		r = w.StatefulSet.Spec.Replicas
	} else {
		r = w.Deployment.Spec.Replicas
	}
	if r == nil {
		return 1
	}
	return *r
}

func (w Workload) setReplicas(n int32) {
	if w.StatefulSet != nil {
		w.StatefulSet.Spec.Replicas = &n
		return
	}
	w.Deployment.Spec.Replicas = &n
}

// DeepCopy copies the workload's object.
func (w Workload) DeepCopy() Workload {
	if w.StatefulSet != nil {
		return Workload{StatefulSet: w.StatefulSet.DeepCopy()}
	}
	return Workload{Deployment: w.Deployment.DeepCopy()}
}

// Get fetches a workload; a missing one is ErrNoSuchWorkload naming it.
func (c *Cluster) Get(ctx context.Context, r Ref) (Workload, error) {
	var w Workload
	var err error
	if r.kind() == KindStatefulSet {
		w.StatefulSet, err = c.api.AppsV1().StatefulSets(c.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	} else {
		w.Deployment, err = c.api.AppsV1().Deployments(c.Namespace).Get(ctx, r.Name, metav1.GetOptions{})
	}
	if apierrors.IsNotFound(err) {
		return Workload{}, fmt.Errorf("%s not found on %s%s: %w", c.Named(r), c.Server, c.contextNote(), ErrNoSuchWorkload)
	}
	if err != nil {
		return Workload{}, fmt.Errorf("get %s on %s%s: %w", c.Named(r), c.Server, c.contextNote(), err)
	}
	return w, nil
}

// ref is "deployment NAMESPACE", which messages follow with "/NAME".
func (c *Cluster) ref(r Ref) string { return strings.ToLower(r.kind()) + " " + c.Namespace }

// Named is "deployment NAMESPACE/NAME", as messages name a workload.
func (c *Cluster) Named(r Ref) string { return c.ref(r) + "/" + r.Name }

// update writes w's changed spec and metadata back.
func (c *Cluster) update(ctx context.Context, w Workload) (Workload, error) {
	var out Workload
	var err error
	if w.StatefulSet != nil {
		out.StatefulSet, err = c.api.AppsV1().StatefulSets(c.Namespace).Update(ctx, w.StatefulSet, metav1.UpdateOptions{})
	} else {
		out.Deployment, err = c.api.AppsV1().Deployments(c.Namespace).Update(ctx, w.Deployment, metav1.UpdateOptions{})
	}
	return out, err
}

// create makes a new workload from w's labels, annotations and spec.
func (c *Cluster) create(ctx context.Context, w Workload) error {
	m := w.Meta()
	meta := metav1.ObjectMeta{Name: m.Name, Namespace: c.Namespace, Labels: m.Labels, Annotations: m.Annotations}
	var err error
	if w.StatefulSet != nil {
		_, err = c.api.AppsV1().StatefulSets(c.Namespace).Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta, Spec: w.StatefulSet.Spec}, metav1.CreateOptions{})
	} else {
		_, err = c.api.AppsV1().Deployments(c.Namespace).Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: w.Deployment.Spec}, metav1.CreateOptions{})
	}
	return err
}

// patch applies a merge patch to the workload.
func (c *Cluster) patch(ctx context.Context, r Ref, body []byte) error {
	var err error
	if r.kind() == KindStatefulSet {
		_, err = c.api.AppsV1().StatefulSets(c.Namespace).Patch(ctx, r.Name, types.MergePatchType, body, metav1.PatchOptions{})
	} else {
		_, err = c.api.AppsV1().Deployments(c.Namespace).Patch(ctx, r.Name, types.MergePatchType, body, metav1.PatchOptions{})
	}
	return err
}

// list lists every Deployment and StatefulSet of the namespace, Deployments first,
// each kind in name order.
func (c *Cluster) list(ctx context.Context) ([]Workload, error) {
	ds, err := c.api.AppsV1().Deployments(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deployments in %s: %w", c.Where(), err)
	}
	ss, err := c.api.AppsV1().StatefulSets(c.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list statefulsets in %s: %w", c.Where(), err)
	}
	var out []Workload
	for i := range ds.Items {
		out = append(out, Workload{Deployment: &ds.Items[i]})
	}
	for i := range ss.Items {
		out = append(out, Workload{StatefulSet: &ss.Items[i]})
	}
	return out, nil
}

// statusReplicas is how many pods the workload's controller counts.
func (w Workload) statusReplicas() int32 {
	if w.StatefulSet != nil {
		return w.StatefulSet.Status.Replicas
	}
	return w.Deployment.Status.Replicas
}
