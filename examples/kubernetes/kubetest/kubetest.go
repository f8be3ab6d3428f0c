package kubetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Cluster is the test cluster as one test sees it.
type Cluster struct {
	Kubeconfig string
	API        kubernetes.Interface
	Namespace  string // this test's own namespace, deleted when it ends
}

// Require connects to the test cluster and makes a namespace for the test, or skips
// (fails when RIGOR_REQUIRE_KUBE=1).
func Require(t *testing.T) *Cluster {
	t.Helper()
	kc := os.Getenv("RIGOR_KUBECONFIG")
	if kc == "" {
		if os.Getenv("RIGOR_REQUIRE_KUBE") == "1" {
			t.Fatal("RIGOR_REQUIRE_KUBE=1 but RIGOR_KUBECONFIG is not set")
		}
		t.Skip("no Kubernetes test cluster: RIGOR_KUBECONFIG is unset (eval \"$(.ci/kube/cluster.sh up)\" starts one; RIGOR_REQUIRE_KUBE=1 makes this a failure)")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatalf("RIGOR_KUBECONFIG=%s: %v", kc, err)
	}
	api, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	_, _ = rand.Read(b[:])
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), ""))
	if len(name) > 30 {
		name = name[:30]
	}
	ns := "rt-" + name + "-" + hex.EncodeToString(b[:])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := api.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s on the test cluster (%s): %v", ns, cfg.Host, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Deployments and Jobs first, so that their pods stop and free the host ports.
		_ = api.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
		background := metav1.DeletePropagationBackground
		_ = api.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
		zero := int64(0)
		_ = api.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = api.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
		for ctx.Err() == nil {
			l, err := api.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(l.Items) == 0 {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
	return &Cluster{Kubeconfig: kc, API: api, Namespace: ns}
}

// LoadImages saves Docker images and imports them into the cluster's containerd,
// where pods with imagePullPolicy Never find them.
func LoadImages(t *testing.T, refs ...string) {
	t.Helper()
	sock := os.Getenv("RIGOR_KUBE_CONTAINERD")
	if sock == "" {
		t.Fatal("RIGOR_KUBE_CONTAINERD is unset: .ci/kube/cluster.sh up exports it with RIGOR_KUBECONFIG")
	}
	for _, ref := range refs {
		f, err := os.CreateTemp("", "rigor-kube-image-*.tar")
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		defer os.Remove(f.Name())
		if out, err := exec.Command("docker", "save", "-o", f.Name(), ref).CombinedOutput(); err != nil {
			t.Fatalf("docker save %s: %v\n%s", ref, err, out)
		}
		if out, err := exec.Command("ctr", "-a", sock, "-n", "k8s.io", "images", "import", "--snapshotter", "native", f.Name()).CombinedOutput(); err != nil {
			t.Fatalf("import %s into the cluster's containerd %s: %v\n%s", ref, sock, err, out)
		}
	}
}

// ApplyDeployments creates the Deployments of a multi-document YAML file in the
// test's namespace, each string of replace replaced first.
func (c *Cluster) ApplyDeployments(t *testing.T, path string, replace ...string) []appsv1.Deployment {
	t.Helper()
	return create(t, c.Namespace, path, replace, func(ctx context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
		return c.API.AppsV1().Deployments(c.Namespace).Create(ctx, d, metav1.CreateOptions{})
	})
}

// ApplyStatefulSets creates the StatefulSets of a multi-document YAML file in the
// test's namespace, each string of replace replaced first.
func (c *Cluster) ApplyStatefulSets(t *testing.T, path string, replace ...string) []appsv1.StatefulSet {
	t.Helper()
	return create(t, c.Namespace, path, replace, func(ctx context.Context, s *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
		return c.API.AppsV1().StatefulSets(c.Namespace).Create(ctx, s, metav1.CreateOptions{})
	})
}

// ApplyJobs creates the Jobs of a multi-document YAML file in the test's namespace,
// each string of replace replaced first.
func (c *Cluster) ApplyJobs(t *testing.T, path string, replace ...string) []batchv1.Job {
	t.Helper()
	return create(t, c.Namespace, path, replace, func(ctx context.Context, j *batchv1.Job) (*batchv1.Job, error) {
		return c.API.BatchV1().Jobs(c.Namespace).Create(ctx, j, metav1.CreateOptions{})
	})
}

// object is what create needs of a Deployment, a StatefulSet or a Job.
type object interface {
	GetName() string
}

// create decodes every document of path (after replace) as a T and creates it.
func create[T any, P interface {
	*T
	object
}](t *testing.T, ns, path string, replace []string, post func(context.Context, P) (P, error)) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = []byte(strings.NewReplacer(replace...).Replace(string(b)))
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []T
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var v T
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: %v", path, err)
		}
		if P(&v).GetName() == "" {
			continue
		}
		made, err := post(ctx, &v)
		if err != nil {
			t.Fatalf("create %s/%s from %s: %v", ns, P(&v).GetName(), path, err)
		}
		out = append(out, *made)
	}
	return out
}

// Pods lists the pods of the test's namespace whose label app has the given value.
func (c *Cluster) Pods(t *testing.T, app string) []corev1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	l, err := c.API.CoreV1().Pods(c.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatalf("list pods app=%s in %s: %v", app, c.Namespace, err)
	}
	return l.Items
}

// Kubeconfig writes a kubeconfig whose only cluster is server (for a test of an
// unreachable API server) and returns its path.
func Kubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := t.TempDir() + "/kubeconfig"
	s := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
