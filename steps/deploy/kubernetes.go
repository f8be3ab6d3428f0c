package deploy

import (
	"context"
	"errors"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// KubeEvidence is identity.json on the kubernetes runtime: the shared identity
// record and the pods it was read from.
type KubeEvidence struct {
	Server    string          `json:"server"`
	Namespace string          `json:"namespace"`
	Identity  docker.Identity `json:"identity"`
	Pods      []kube.Pod      `json:"pods"`
}

// runKube deploys a kubernetes target: save every other Deployment or StatefulSet
// that serves the endpoint's port (its full object and its pods' image IDs), scale it
// to 0 and wait until its last pod is gone (the outage begins there), point the
// target's workload at its image with its replicas, wait for the rollout within the
// step's bound, then for health.
func runKube(ctx context.Context, sc *engine.StepContext, t target.Target) engine.Result {
	port, err := t.Port()
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	c, err := target.Kube(ctx, t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	ref := target.KubeRef(t)
	if _, err := c.Get(ctx, ref); err != nil {
		if errors.Is(err, kube.ErrNoSuchWorkload) {
			return engine.Failed(engine.ClassConfig, "target %s: %v", t.Name, err)
		}
		return engine.Failed(engine.ClassHealth, "target %s: %v", t.Name, err)
	}
	occupants, err := c.Occupants(ctx, port, ref)
	if err != nil {
		return engine.Failed(engine.ClassHealth, "target %s: %v", t.Name, err)
	}
	for _, occ := range occupants {
		name := occ.Meta().Name
		// The restore manifest is written before anything is touched: if the scale
		// below half-works, restore still knows exactly what to bring back.
		pods, err := c.Pods(ctx, occ)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "%v", err)
		}
		saved, err := c.Save(occ, pods, t.APIKey)
		if err != nil {
			return engine.Failed(engine.ClassInternal, "%v", err)
		}
		// One file per occupant: a second workload on the port must not overwrite
		// the first's manifest (restore finds each by its kind and name inside).
		file := docker.ManifestFile
		if len(occupants) > 1 {
			file = kube.ManifestFileOf(strings.ToLower(occ.Ref().Kind) + "." + name)
		}
		if err := WriteJSON(sc.Path(file), saved); err != nil {
			return engine.Failed(engine.ClassInternal, "write restore manifest: %v", err)
		}
		sc.Log.Info().Str(strings.ToLower(occ.Ref().Kind), name).Str("image_id", saved.Identity.ImageID).Msg("taking the current occupant out of service")
		if err := c.Scale(ctx, occ.Ref(), 0); err != nil {
			return waitFailure(t, err)
		}
	}
	if _, err := c.SetImage(ctx, ref, t.KubeContainer, t.Image, int32(t.Replicas)); err != nil {
		return engine.Failed(engine.ClassConfig, "target %s: %v", t.Name, err)
	}
	if _, err := c.WaitRollout(ctx, ref); err != nil {
		return waitFailure(t, err)
	}
	id, pods, err := c.Inspect(ctx, ref)
	if err != nil {
		return engine.Failed(engine.ClassIdentity, "inspect %s after the rollout: %v", t.Container, err)
	}
	want, _ := target.ExpectedImageID(ctx, t)
	if want != "" && id.ImageID != want {
		return engine.Failed(engine.ClassIdentity, "%s runs image %s, expected %s", c.Named(ref), id.ImageID, want)
	}
	if err := target.WaitHealthyKube(ctx, t, c); err != nil {
		return waitFailure(t, err)
	}
	if id, pods, err = c.Inspect(ctx, ref); err != nil {
		return engine.Failed(engine.ClassIdentity, "inspect %s after health: %v", t.Container, err)
	}
	id.Endpoint = t.Endpoint
	if err := WriteJSON(sc.Path("identity.json"), KubeEvidence{Server: c.Server, Namespace: c.Namespace, Identity: id, Pods: pods}); err != nil {
		return engine.Failed(engine.ClassInternal, "write identity: %v", err)
	}
	return engine.Succeeded(DockerIdentityValue(id))
}
