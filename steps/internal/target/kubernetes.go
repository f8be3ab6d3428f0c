package target

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/zclconf/go-cty/cty"
)

// RuntimeKubernetes runs a target as a Deployment through steps/internal/kube.
const RuntimeKubernetes = "kubernetes"

// readKube reads the attributes of the Kubernetes runtime: the host's kubeconfig,
// context and namespace, and the target's deployment (default: its container
// attribute, else its name), the container in its pod template whose image the
// target sets (kube_container, default the first) and the replicas it runs.
func (t *Target) readKube(v cty.Value) error {
	if h := attr(v, "host"); h != cty.NilVal && !h.IsNull() && h.Type().IsObjectType() {
		t.Kubeconfig, t.KubeContext, t.Namespace = Str(h, "kubeconfig"), Str(h, "context"), Str(h, "namespace")
		if t.Kubeconfig != "" && !filepath.IsAbs(t.Kubeconfig) {
			return fmt.Errorf("target %s: host %s: kubeconfig %q must be an absolute path", t.Name, t.Host, t.Kubeconfig)
		}
	}
	if d := Str(v, "deployment"); d != "" {
		t.Container = d
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

// KubeInspect returns the identity of the target's Deployment and its pods.
func KubeInspect(ctx context.Context, t Target) (docker.Identity, []kube.Pod, error) {
	c, err := Kube(ctx, t)
	if err != nil {
		return docker.Identity{}, nil, err
	}
	id, pods, err := c.Inspect(ctx, t.Container)
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
// health_timeout, and gives up at once when a pod of the Deployment is OOM-killed or
// cannot start (*kube.RolloutError), or the Deployment stops running.
func WaitHealthyKube(ctx context.Context, t Target, c *kube.Cluster) error {
	return waitHealthy(ctx, t, func(ctx context.Context) error {
		id, pods, err := c.Inspect(ctx, t.Container)
		if err != nil {
			return err
		}
		if e := kube.Stuck(c.Namespace+"/"+t.Container, pods); e != nil {
			return e
		}
		if !id.Running() {
			return fmt.Errorf("deployment %s/%s is %s", c.Namespace, t.Container, id.Status)
		}
		return nil
	})
}
