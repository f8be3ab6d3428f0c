package restore

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// runKube restores a kubernetes incumbent: every other Deployment or StatefulSet
// serving the endpoint's port is scaled to 0, then the newest restore manifest a
// deploy saved for this target's workload is applied again with each container pinned to the exact
// image ID its pods ran; without a manifest (the incumbent was never taken out of
// service) the workload is put at the plan's image and replicas. Then the rollout,
// the image IDs, health, preflight and protected files are verified.
func runKube(ctx context.Context, sc *engine.StepContext, t target.Target, rc *Receipt, check checkFunc) engine.Result {
	rc.Runtime = target.RuntimeKubernetes
	port, err := t.Port()
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	c, err := target.Kube(ctx, t)
	if err != nil {
		check("connect", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	rc.KubeServer, rc.Namespace = c.Server, c.Namespace
	ref := target.KubeRef(t)
	kind := strings.ToLower(ref.Kind)
	saved, path, err := c.FindSaved(sc.StateDir, ref)
	if err != nil {
		check("restore manifest", false, "%v", err)
		return engine.Failed(engine.ClassInternal, "%v", err)
	}
	if saved != nil {
		rel, _ := filepath.Rel(sc.StateDir, path)
		rc.Manifest = filepath.ToSlash(rel)
		check("restore manifest", true, "%s names %s %s/%s, image %s, incarnation %s", rc.Manifest, strings.ToLower(saved.Ref().Kind), saved.Namespace, saved.Identity.Name, saved.Identity.ImageID, saved.Identity.Incarnation)
	}
	occupants, err := c.Occupants(ctx, port, ref)
	if err != nil {
		check("stop candidate", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	for _, occ := range occupants {
		if err := c.Scale(ctx, occ.Ref(), 0); err != nil {
			check("stop candidate", false, "%s: %v", occ.Ref(), err)
			return engine.Failed(engine.ClassHealth, "%v", err)
		}
		rc.Stopped = append(rc.Stopped, occ.Ref().String())
	}
	got, err := c.Get(ctx, ref)
	if err != nil && !errors.Is(err, kube.ErrNoSuchWorkload) {
		check("inspect", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	var live *kube.Workload
	if err == nil {
		live = &got
	}
	var pinned map[string]string
	switch {
	case saved != nil:
		var w kube.Workload
		if w, pinned, err = saved.Pinned(live, t.Env); err == nil {
			err = c.Apply(ctx, w, live)
		}
		rc.Action = "reapplied-from-manifest"
		if live == nil {
			rc.Action = "recreated-from-manifest"
		}
		if err != nil {
			check("apply", false, "%v", err)
			return engine.Failed(engine.ClassHealth, "restore %s: %v", t.Container, err)
		}
	case live != nil:
		id, _, _ := c.Inspect(ctx, ref)
		rc.Action = "already-running"
		if !id.Running() || (t.Image != "" && !imageDeclared(*live, t)) {
			rc.Action = "scaled-from-plan"
			if _, err := c.SetImage(ctx, ref, t.KubeContainer, t.Image, int32(t.Replicas)); err != nil {
				check("apply", false, "%v", err)
				return engine.Failed(engine.ClassHealth, "restore %s: %v", t.Container, err)
			}
		}
	default:
		check("restore manifest", false, "no deploy saved %s %s and it is not in %s", kind, t.Container, c.Where())
		return engine.Failed(engine.ClassConfig, "target %s: %s %s is not in %s and no deploy saved it", t.Name, kind, t.Container, c.Where())
	}
	if _, err := c.WaitRollout(ctx, ref); err != nil {
		check("rollout", false, "%v", err)
		return restoredFailure(t, err)
	}
	id, pods, err := c.Inspect(ctx, ref)
	if err != nil {
		check("inspect", false, "%v", err)
		return engine.Failed(engine.ClassIdentity, "inspect %s: %v", t.Container, err)
	}
	id.Endpoint = t.Endpoint
	rc.Container = deploy.KubeEvidence{Server: c.Server, Namespace: c.Namespace, Identity: id, Pods: pods}
	want := strings.Join(slices.Compact(slices.Sorted(maps.Values(pinned))), ",")
	if w, _ := target.ExpectedImageID(ctx, t); w != "" && want == "" {
		want = w
	}
	if want != "" {
		if !check("image identity", id.ImageID == want, "running %s, expected %s", id.ImageID, want) {
			return engine.Failed(engine.ClassIdentity, "restored %s runs image %s, expected %s", t.Container, id.ImageID, want)
		}
	}
	if err := target.WaitHealthyKube(ctx, t, c); err != nil {
		check("health", false, "%v", err)
		return restoredFailure(t, err)
	}
	check("health", true, "%s%s answered 2xx", t.Endpoint, t.HealthPath)
	if r := verifyRestored(ctx, sc, t, rc, check); r != nil {
		return *r
	}
	if id, pods, err = c.Inspect(ctx, ref); err == nil {
		id.Endpoint = t.Endpoint
		rc.Container = deploy.KubeEvidence{Server: c.Server, Namespace: c.Namespace, Identity: id, Pods: pods}
	}
	rc.Outcome = "restored"
	return engine.Succeeded(deploy.DockerIdentityValue(id))
}

// imageDeclared reports whether the workload's container already names the
// target's image.
func imageDeclared(w kube.Workload, t target.Target) bool {
	spec := w.Template().Spec
	i, err := kube.ContainerIndex(spec, t.KubeContainer)
	return err == nil && spec.Containers[i].Image == t.Image
}
