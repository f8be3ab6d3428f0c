package kube_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/examples/kubernetes/kubetest"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestUnreachableServerNamesItsURL needs no cluster: the kubeconfig points at a
// closed loopback port in the project's range.
func TestUnreachableServerNamesItsURL(t *testing.T) {
	const url = "https://127.0.0.1:19299"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kube.Connect(ctx, kubetest.Kubeconfig(t, url), "", "ns")
	if !errors.Is(err, kube.ErrUnreachable) || !strings.Contains(err.Error(), "kubernetes API server unreachable: "+url) {
		t.Fatalf("Connect to %s: %v; want ErrUnreachable naming the URL", url, err)
	}
	_, err = kube.Connect(ctx, kubetest.Kubeconfig(t, url), "no-such-context", "ns")
	if !errors.Is(err, kube.ErrNoConfig) || !strings.Contains(err.Error(), "context no-such-context") {
		t.Fatalf("Connect with a missing context: %v; want ErrNoConfig naming the context", err)
	}
}

// pauseDeployment runs the cluster's sandbox image, already in its containerd.
func pauseDeployment(name string) *appsv1.Deployment {
	one := int32(1)
	grace := int64(1)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &grace,
					Containers: []corev1.Container{{Name: "main", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: corev1.PullNever,
						Env: []corev1.EnvVar{{Name: "API_TOKEN", Value: "s3cret"}, {Name: "PLAIN", Value: "kept"}}}},
				},
			},
		},
	}
}

// pauseStatefulSet is pauseDeployment as a StatefulSet.
func pauseStatefulSet(name string) *appsv1.StatefulSet {
	d := pauseDeployment(name)
	return &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

// TestIdentityRestartAndExactRestore runs on the test cluster, once for a Deployment
// and once for a StatefulSet: a workload's identity names its pod, node, container
// and image ID; deleting the pod makes a new incarnation; a saved workload applied
// again after its image changed to one that cannot start runs the exact image ID it
// ran before, with its secret environment value back. For the StatefulSet that is
// Kubernetes' forced rollback: its controller never replaces the pod that could not
// start by itself, so the rollout wait must.
func TestIdentityRestartAndExactRestore(t *testing.T) {
	kc := kubetest.Require(t)
	for _, kind := range []string{kube.KindDeployment, kube.KindStatefulSet} {
		t.Run(kind, func(t *testing.T) { identityRestartAndExactRestore(t, kc, kind) })
	}
}

func identityRestartAndExactRestore(t *testing.T, kc *kubetest.Cluster, kind string) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := kube.Connect(ctx, kc.Kubeconfig, "", kc.Namespace)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.ToLower(kind[:1]) + "p"
	ref := kube.Ref{Kind: kind, Name: name}
	ghost := kube.Ref{Kind: kind, Name: "ghost"}
	if _, _, err := c.Inspect(ctx, ghost); !errors.Is(err, kube.ErrNoSuchWorkload) || !strings.Contains(err.Error(), strings.ToLower(kind)+" "+kc.Namespace+"/ghost not found on "+c.Server) {
		t.Fatalf("inspect a missing %s: %v; want ErrNoSuchWorkload naming it and the server", kind, err)
	}
	if kind == kube.KindStatefulSet {
		_, err = kc.API.AppsV1().StatefulSets(kc.Namespace).Create(ctx, pauseStatefulSet(name), metav1.CreateOptions{})
	} else {
		_, err = kc.API.AppsV1().Deployments(kc.Namespace).Create(ctx, pauseDeployment(name), metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	pods, err := c.WaitRollout(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	id, _, err := c.Inspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if len(pods) != 1 || id.Status != "running" || id.Health != "healthy" || id.Name != name {
		t.Fatalf("after the rollout: %d pods, status %q, health %q, name %q", len(pods), id.Status, id.Health, id.Name)
	}
	p := pods[0]
	if want := p.UID + "/0"; id.Incarnation != want {
		t.Errorf("incarnation %q, want %q (pod UID/restart count)", id.Incarnation, want)
	}
	if p.Node != "rigor-node" || len(p.Containers) != 1 || !strings.HasPrefix(p.Containers[0].ContainerID, "containerd://") || p.Template == "" {
		t.Errorf("pod record lacks the node, the container ID or the template revision: %+v", p)
	}
	if !strings.HasPrefix(id.ImageID, "sha256:") || len(id.ImageID) != len("sha256:")+64 {
		t.Fatalf("image ID %q is not a sha256 digest", id.ImageID)
	}
	saved, err := c.Save(mustGet(t, c, ref), pods)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(saved.Object), "s3cret") || len(saved.RedactedEnv) != 1 || saved.RedactedEnv[0] != "main/API_TOKEN" || saved.Ref() != ref {
		t.Errorf("the saved object keeps a secret value, misses its redaction or names another workload: %v %v", saved.RedactedEnv, saved.Ref())
	}

	// A pod killed and replaced is a new incarnation.
	if err := kc.API.CoreV1().Pods(kc.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitRollout(ctx, ref); err != nil {
		t.Fatal(err)
	}
	after, _, err := c.Inspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if after.Incarnation == id.Incarnation || strings.Contains(after.Incarnation, p.UID) {
		t.Fatalf("incarnation after the pod was replaced: %q, before %q", after.Incarnation, id.Incarnation)
	}

	// Another image that cannot start, then the saved object again: the exact image
	// ID comes back, pinned in the pod template.
	if _, err := c.SetImage(ctx, ref, "", "registry.k8s.io/pause:no-such-tag", 1); err != nil {
		t.Fatal(err)
	}
	var re *kube.RolloutError
	if _, err := c.WaitRollout(ctx, ref); !errors.As(err, &re) || re.Reason != "ErrImageNeverPull" || re.Workload != c.Named(ref) {
		t.Fatalf("rollout of a missing image: %v; want a RolloutError ErrImageNeverPull naming %s", err, c.Named(ref))
	}
	live := mustGet(t, c, ref)
	w, pinned, err := saved.Pinned(&live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pinned["main"] != id.ImageID || w.Template().Spec.Containers[0].Image == "registry.k8s.io/pause:no-such-tag" {
		t.Fatalf("pinned %v, template image %q; want %s and the saved reference", pinned, w.Template().Spec.Containers[0].Image, id.ImageID)
	}
	if err := c.Apply(ctx, w, &live); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitRollout(ctx, ref); err != nil {
		t.Fatal(err)
	}
	restored, _, err := c.Inspect(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if restored.ImageID != id.ImageID || restored.Status != "running" {
		t.Fatalf("restored: image %s status %q; want %s running", restored.ImageID, restored.Status, id.ImageID)
	}
	env := mustGet(t, c, ref).Template().Spec.Containers[0].Env
	if len(env) != 2 || env[0].Value != "s3cret" || env[1].Value != "kept" {
		t.Errorf("restored env %+v; want the secret taken back from the live object", env)
	}

	// Scaled to 0, the workload has no pods and says so.
	if err := c.Scale(ctx, ref, 0); err != nil {
		t.Fatal(err)
	}
	if id, _, _ := c.Inspect(ctx, ref); id.Status != "scaled to 0" || id.Running() {
		t.Fatalf("after scaling to 0: status %q", id.Status)
	}
}

func mustGet(t *testing.T, c *kube.Cluster, r kube.Ref) kube.Workload {
	t.Helper()
	w, err := c.Get(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return w
}
