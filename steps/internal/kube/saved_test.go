package kube

import (
	"context"
	"fmt"

	"encoding/json"
	"errors"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// These tests run the API calls against client-go's object tracker: no controller
// runs there, so they hold what rigor writes, not rollouts (kube_test.go does those
// on the real test cluster).

func served(name, image string, port, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "sim", Image: image, Ports: []corev1.ContainerPort{{ContainerPort: port}},
					Env: []corev1.EnvVar{{Name: "HF_TOKEN", Value: "hf_secret"}, {Name: "MODE", Value: "fast"}}}}}}},
	}
}

func runningPod(name, app, imageID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "sim", Image: "x"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "sim", ImageID: imageID, ContainerID: "containerd://c1",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}},
	}
}

// An image imported into the node (its ID a bare sha256:...) keeps its saved
// reference: a kubelet finds no image by a bare ID, and the digest is checked after.
func TestPinnedKeepsAnImportedImagesReference(t *testing.T) {
	const digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	api := fake.NewSimpleClientset(served("inc", "sim:incumbent", 19210, 1), runningPod("inc-1", "inc", digest))
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	ctx := context.Background()
	d, _ := c.Get(ctx, Deployment("inc"))
	pods, _ := c.Pods(ctx, d)
	saved, err := c.Save(d, pods)
	if err != nil {
		t.Fatal(err)
	}
	pinned, want, err := saved.Pinned(&d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if img := pinned.Template().Spec.Containers[0].Image; img != "sim:incumbent" || want["sim"] != digest {
		t.Errorf("image %s, want sim:incumbent; digest to verify %v", img, want)
	}
}

// An update that conflicts with the controller's own write (the object changed
// since it was read) is made again on a fresh read, for SetImage and Apply alike.
func TestUpdatesRetryOnConflict(t *testing.T) {
	api := fake.NewSimpleClientset(served("inc", "sim:incumbent", 19210, 1))
	conflicts := 0
	api.PrependReactor("update", "deployments", func(action k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts < 2 {
			conflicts++
			return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "apps", Resource: "deployments"}, "inc", fmt.Errorf("the object has been modified"))
		}
		return false, nil, nil
	})
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	ctx := context.Background()
	if _, err := c.SetImage(ctx, Deployment("inc"), "", "sim:other", 2); err != nil || conflicts != 2 {
		t.Fatalf("SetImage after %d conflicts: %v", conflicts, err)
	}
	w, _ := c.Get(ctx, Deployment("inc"))
	d := w.Deployment
	if d.Spec.Template.Spec.Containers[0].Image != "sim:other" || *d.Spec.Replicas != 2 {
		t.Errorf("after SetImage: %s x%d", d.Spec.Template.Spec.Containers[0].Image, *d.Spec.Replicas)
	}
	conflicts = 0
	want := d.DeepCopy()
	want.Spec.Template.Spec.Containers[0].Image = "sim:incumbent"
	if err := c.Apply(ctx, Workload{Deployment: want}, &w); err != nil || conflicts != 2 {
		t.Fatalf("Apply after %d conflicts: %v", conflicts, err)
	}
	if w, _ = c.Get(ctx, Deployment("inc")); w.Deployment.Spec.Template.Spec.Containers[0].Image != "sim:incumbent" {
		t.Errorf("after Apply: %s", d.Spec.Template.Spec.Containers[0].Image)
	}
}

// Two workloads on one port, a Deployment and a StatefulSet of the same name, each
// keep a manifest of their own in the deploy's attempt
// (restore-manifest.<kind>.<name>.json), and restore finds each by kind and name.
func TestFindSavedOfSeveralOccupants(t *testing.T) {
	api := fake.NewSimpleClientset(served("a", "sim:a", 19210, 1), servedSet("a", "sim:b", 19210, 1),
		runningPod("a-1", "a", "sha256:aa"), runningPod("b-0", "b", "sha256:bb"))
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	ctx := context.Background()
	occ, err := c.Occupants(ctx, 19210, Deployment("cand"))
	if err != nil || len(occ) != 2 || occ[0].Ref() != Deployment("a") || occ[1].Ref() != StatefulSet("a") {
		t.Fatalf("occupants %v %v; want deployment a, then statefulset a", occ, err)
	}
	// The StatefulSet's pods carry its selector's label.
	occ[1].StatefulSet.Spec.Selector.MatchLabels = map[string]string{"app": "b"}
	state := t.TempDir()
	dir := filepath.Join(state, "attempts", "deploy.cand", "1")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, w := range occ {
		pods, _ := c.Pods(ctx, w)
		saved, err := c.Save(w, pods)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(saved)
		if err := os.WriteFile(filepath.Join(dir, ManifestFileOf(strings.ToLower(w.Ref().Kind)+"."+w.Meta().Name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for ref, digest := range map[Ref]string{Deployment("a"): "sha256:aa", StatefulSet("a"): "sha256:bb"} {
		got, path, err := c.FindSaved(state, ref)
		file := "restore-manifest." + strings.ToLower(ref.Kind) + ".a.json"
		if err != nil || got == nil || got.Identity.ImageID != digest || got.Ref() != ref || filepath.Base(path) != file {
			t.Errorf("FindSaved(%s): %+v at %s, %v; want %s from %s", ref, got, path, err, digest, file)
		}
	}
	if got, _, _ := c.FindSaved(state, StatefulSet("b")); got != nil {
		t.Errorf("FindSaved(statefulset b) found %+v; nothing saved it", got.Ref())
	}
}

func servedSet(name, image string, port, replicas int32) *appsv1.StatefulSet {
	d := served(name, image, port, replicas)
	return &appsv1.StatefulSet{ObjectMeta: d.ObjectMeta,
		Spec: appsv1.StatefulSetSpec{Replicas: d.Spec.Replicas, Selector: d.Spec.Selector, Template: d.Spec.Template}}
}

// A StatefulSet saved before a deploy is put back as a StatefulSet: pinned to its
// pods' registry digest, with its secret from the live object, by an update.
func TestStatefulSetSaveAndPinnedApply(t *testing.T) {
	const digest = "sha256:3333333333333333333333333333333333333333333333333333333333333333"
	api := fake.NewSimpleClientset(servedSet("inc", "sim:incumbent", 19210, 1), runningPod("inc-0", "inc", "docker.io/library/sim@"+digest))
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	ctx := context.Background()
	occ, err := c.Occupants(ctx, 19210, Deployment("inc"))
	if err != nil || len(occ) != 1 || occ[0].Ref() != StatefulSet("inc") {
		t.Fatalf("occupants %v %v; want statefulset inc (the excepted name is a Deployment's)", occ, err)
	}
	w, _ := c.Get(ctx, StatefulSet("inc"))
	pods, _ := c.Pods(ctx, w)
	saved, err := c.Save(w, pods)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Workload != KindStatefulSet || !strings.Contains(string(saved.Object), `"kind":"StatefulSet"`) || strings.Contains(string(saved.Object), "hf_secret") {
		t.Fatalf("saved %s: %s", saved.Workload, saved.Object)
	}
	if _, err := c.SetImage(ctx, StatefulSet("inc"), "", "sim:candidate", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, Deployment("inc")); !errors.Is(err, ErrNoSuchWorkload) || !strings.Contains(err.Error(), "deployment ns/inc not found") {
		t.Errorf("a Deployment of the StatefulSet's name: %v", err)
	}
	live, _ := c.Get(ctx, StatefulSet("inc"))
	pinned, want, err := saved.Pinned(&live, nil)
	if err != nil || pinned.StatefulSet == nil || want["sim"] != digest {
		t.Fatalf("pinned %+v %v %v", pinned.Ref(), want, err)
	}
	if err := c.Apply(ctx, pinned, &live); err != nil {
		t.Fatal(err)
	}
	back, _ := c.Get(ctx, StatefulSet("inc"))
	ct := back.Template().Spec.Containers[0]
	if ct.Image != "docker.io/library/sim@"+digest || back.Replicas() != 1 || ct.Env[0].Value != "hf_secret" {
		t.Errorf("after apply: image %s, replicas %d, env %+v", ct.Image, back.Replicas(), ct.Env)
	}
}

func TestOccupantsSaveAndPinnedApply(t *testing.T) {
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	api := fake.NewSimpleClientset(
		served("inc", "sim:incumbent", 19210, 1), served("cand", "sim:candidate", 19210, 0),
		served("other", "sim:x", 19211, 1), runningPod("inc-1", "inc", "docker.io/library/sim@"+digest))
	c := &Cluster{api: api, Server: "https://k:6443", Namespace: "ns"}
	ctx := context.Background()

	occ, err := c.Occupants(ctx, 19210, Deployment("cand"))
	if err != nil || len(occ) != 1 || occ[0].Ref() != Deployment("inc") {
		t.Fatalf("occupants of 19210: %v %v; want inc alone (cand is the target, other serves 19211)", occ, err)
	}
	d, _ := c.Get(ctx, Deployment("inc"))
	pods, _ := c.Pods(ctx, d)
	saved, err := c.Save(d, pods)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Identity.ImageID != digest || saved.Identity.Status != "running" || strings.Contains(string(saved.Object), "hf_secret") ||
		!strings.Contains(string(saved.Object), `"MODE","value":"fast"`) || len(saved.RedactedEnv) != 1 {
		t.Fatalf("saved: %+v redacted %v\n%s", saved.Identity, saved.RedactedEnv, saved.Object)
	}

	// The candidate's turn: the incumbent changed (another image, 0 replicas).
	if _, err := c.SetImage(ctx, Deployment("inc"), "sim", "sim:other", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SetImage(ctx, Deployment("inc"), "nope", "sim:other", 1); err == nil || !strings.Contains(err.Error(), `deployment ns/inc: no container "nope" in the pod template (it has sim)`) {
		t.Errorf("a missing container: %v", err)
	}
	live, _ := c.Get(ctx, Deployment("inc"))
	pinned, want, err := saved.Pinned(&live, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want["sim"] != digest {
		t.Errorf("pinned %v", want)
	}
	if err := c.Apply(ctx, pinned, &live); err != nil {
		t.Fatal(err)
	}
	back, _ := c.Get(ctx, Deployment("inc"))
	ct := back.Template().Spec.Containers[0]
	// The pods ran an image pulled from a registry: the template names it by digest.
	if ct.Image != "docker.io/library/sim@"+digest || back.Replicas() != 1 || ct.Env[0].Value != "hf_secret" {
		t.Errorf("after apply: image %s, replicas %d, env %+v", ct.Image, back.Replicas(), ct.Env)
	}

	// Deleted meanwhile: created again from the manifest; a redacted value the live
	// object cannot give back comes from the plan, else it is an error naming it.
	if _, _, err := saved.Pinned(nil, nil); err == nil || !strings.Contains(err.Error(), "deployment inc container sim") || !strings.Contains(err.Error(), "HF_TOKEN") {
		t.Errorf("a redacted value nobody declares: %v", err)
	}
	_ = api.AppsV1().Deployments("ns").Delete(ctx, "inc", metav1.DeleteOptions{})
	pinned, _, err = saved.Pinned(nil, map[string]string{"HF_TOKEN": "from-plan"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Apply(ctx, pinned, nil); err != nil {
		t.Fatal(err)
	}
	if back, _ := c.Get(ctx, Deployment("inc")); back.Template().Spec.Containers[0].Env[0].Value != "from-plan" || back.Template().Spec.Containers[0].Image != "docker.io/library/sim@"+digest {
		t.Errorf("recreated: %+v", back.Template().Spec.Containers[0])
	}
}
