package target

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/zclconf/go-cty/cty"
)

// RuntimeKubernetes runs a target as a Deployment or StatefulSet through
// steps/internal/kube.
const RuntimeKubernetes = "kubernetes"

// readKube reads the attributes of the Kubernetes runtime: the host's kubeconfig,
// context and namespace, and the target's workload: the Deployment it names
// (deployment; default its container attribute, else its name) or the StatefulSet
// (statefulset), the container in its pod template whose image the target sets
// (kube_container, default the first) and the replicas it runs.
func (t *Target) readKube(v cty.Value) error {
	if h := attr(v, "host"); h != cty.NilVal && !h.IsNull() && h.Type().IsObjectType() {
		t.Kubeconfig, t.KubeContext, t.Namespace = Str(h, "kubeconfig"), Str(h, "context"), Str(h, "namespace")
		if t.Kubeconfig != "" && !filepath.IsAbs(t.Kubeconfig) {
			return fmt.Errorf("target %s: host %s: kubeconfig %q must be an absolute path", t.Name, t.Host, t.Kubeconfig)
		}
	}
	t.KubeKind = kube.KindDeployment
	d, s := Str(v, "deployment"), Str(v, "statefulset")
	switch {
	case d != "" && s != "":
		return fmt.Errorf("target %s: deployment %q and statefulset %q: a target runs as one workload; set one of them", t.Name, d, s)
	case d != "":
		t.Container = d
	case s != "":
		t.Container, t.KubeKind = s, kube.KindStatefulSet
	}
	t.KubeContainer = Str(v, "kube_container")
	t.Replicas = Int(v, "replicas", 1)
	if t.Runtime == RuntimeKubernetes && t.Replicas < 1 {
		return fmt.Errorf("target %s: replicas must be at least 1, got %d", t.Name, t.Replicas)
	}
	return nil
}

// Kube connects to the cluster and namespace of the target's host.
func Kube(ctx context.Context, t Target) (*kube.Cluster, error) {
	c, err := kube.Connect(ctx, t.Kubeconfig, t.KubeContext, t.Namespace)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return c, nil
}

// KubeRef names the target's workload.
func KubeRef(t Target) kube.Ref { return kube.Ref{Kind: t.KubeKind, Name: t.Container} }

// KubeInspect returns the identity of the target's workload and its pods.
func KubeInspect(ctx context.Context, t Target) (docker.Identity, []kube.Pod, error) {
	c, err := Kube(ctx, t)
	if err != nil {
		return docker.Identity{}, nil, err
	}
	id, pods, err := c.Inspect(ctx, KubeRef(t))
	if err != nil {
		return id, pods, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return id, pods, nil
}

// kubeHost is what tells two clusters apart in a refresh key without connecting.
func kubeHost(t Target) string {
	return fmt.Sprintf("%s#%s/%s", t.Kubeconfig, t.KubeContext, t.Namespace)
}

// WaitHealthyKube polls the health endpoint until it answers 2xx within the target's
// health_timeout, and gives up at once when a pod of the workload is OOM-killed or
// cannot start (*kube.RolloutError), or the workload stops running.
func WaitHealthyKube(ctx context.Context, t Target, c *kube.Cluster) error {
	return waitHealthy(ctx, t, func(ctx context.Context) error {
		r := KubeRef(t)
		id, pods, err := c.Inspect(ctx, r)
		if err != nil {
			return err
		}
		if e := kube.Stuck(c.Named(r), pods); e != nil {
			return e
		}
		if !id.Running() {
			return fmt.Errorf("%s is %s", c.Named(r), id.Status)
		}
		return nil
	})
}

// KubePodEvents lists what the cluster reported about the pods of an incarnation of
// the target's workload since a moment, oldest first.
func KubePodEvents(ctx context.Context, t Target, incarnation string, since time.Time) ([]kube.Event, error) {
	c, err := Kube(ctx, t)
	if err != nil {
		return nil, err
	}
	return c.PodEvents(ctx, incarnation, since)
}
