package deploy

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// StopGraceS is how long a stopped container gets between SIGTERM and SIGKILL.
const StopGraceS = 10

// runDocker deploys a docker target: save the occupant's inspect, stop it (never
// remove it), create or reuse the declared container, start it, wait for health.
func runDocker(ctx context.Context, sc *engine.StepContext, t target.Target) engine.Result {
	spec, err := target.DockerSpec(t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	port, err := t.Port()
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	c, err := target.Docker(ctx, t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	occupants, err := c.Occupants(ctx, port)
	if err != nil {
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	for _, occ := range occupants {
		if occ.Name == t.Container {
			continue
		}
		// The restore manifest is written before anything is touched: if the stop
		// below half-works, restore still knows exactly what to bring back.
		_, raw, err := c.Inspect(ctx, occ.ContainerID)
		if err != nil {
			return engine.Failed(engine.ClassIdentity, "inspect occupant %s: %v", occ.Name, err)
		}
		m, err := docker.NewManifest(c.Host(), occ, raw, t.APIKey)
		if err != nil {
			return engine.Failed(engine.ClassInternal, "%v", err)
		}
		if err := WriteJSON(sc.Path(docker.ManifestFile), m); err != nil {
			return engine.Failed(engine.ClassInternal, "write restore manifest: %v", err)
		}
		sc.Log.Info().Str("container", occ.Name).Str("id", occ.ContainerID[:12]).Msg("taking the current occupant out of service")
		if err := c.Stop(ctx, occ.ContainerID, StopGraceS); err != nil {
			return engine.Failed(engine.ClassHealth, "take %s out of service: %v", occ.Name, err)
		}
	}
	want, err := target.ExpectedImageID(ctx, t)
	if err != nil {
		return engine.Failed(engine.ClassIdentity, "%v", err)
	}
	id, _, err := c.Inspect(ctx, t.Container)
	declared := err == nil && id.ImageID == want && specOf(ctx, c, id.ContainerID) == spec.SHA256()
	switch {
	case declared && id.Running():
		sc.Log.Info().Str("container", id.Name).Msg("already running as declared")
	case declared:
		if err := c.Start(ctx, id.ContainerID); err != nil {
			return startFailure(sc, t, err)
		}
	default:
		if err == nil {
			// A container of that name that is not the declared one: replace it.
			if id.Running() {
				if err := c.Stop(ctx, id.ContainerID, StopGraceS); err != nil {
					return engine.Failed(engine.ClassHealth, "stop stale container %s: %v", t.Container, err)
				}
			}
			if err := c.Remove(ctx, id.ContainerID); err != nil {
				return engine.Failed(engine.ClassHealth, "remove stale container %s: %v", t.Container, err)
			}
		} else if !errors.Is(err, docker.ErrNoSuchContainer) {
			return engine.Failed(engine.ClassHealth, "%v", err)
		}
		newID, err := c.Create(ctx, spec)
		if err != nil {
			return engine.Failed(engine.ClassConfig, "target %s: %v", t.Name, err)
		}
		if err := c.Start(ctx, newID); err != nil {
			return startFailure(sc, t, err)
		}
	}
	id, raw, err := c.Inspect(ctx, t.Container)
	if err != nil {
		return engine.Failed(engine.ClassIdentity, "inspect %s after start: %v", t.Container, err)
	}
	if id.ImageID != want {
		return engine.Failed(engine.ClassIdentity, "container %s runs image %s, expected %s", t.Container, id.ImageID, want)
	}
	if err := target.WaitHealthyDocker(ctx, t, c, id.ContainerID); err != nil {
		return waitFailure(t, err)
	}
	if id, raw, err = c.Inspect(ctx, id.ContainerID); err != nil {
		return engine.Failed(engine.ClassIdentity, "inspect %s after health: %v", t.Container, err)
	}
	id.Endpoint = t.Endpoint
	if m, err := docker.NewManifest(c.Host(), id, raw, t.APIKey); err == nil {
		_ = os.WriteFile(sc.Path("inspect.json"), append(m.Inspect, '\n'), 0o644)
	}
	if err := WriteJSON(sc.Path("identity.json"), id); err != nil {
		return engine.Failed(engine.ClassInternal, "write identity: %v", err)
	}
	return engine.Succeeded(DockerIdentityValue(id))
}

func specOf(ctx context.Context, c *docker.Client, id string) string {
	r, err := c.API().ContainerInspect(ctx, id)
	if err != nil || r.Config == nil {
		return ""
	}
	return r.Config.Labels[docker.LabelSpec]
}

func startFailure(sc *engine.StepContext, t target.Target, err error) engine.Result {
	var taken *docker.PortTakenError
	if errors.As(err, &taken) {
		return engine.Failed(engine.ClassConfig, "%s (%s)", target.PortTaken(sc.Plan, t, taken.Addr), err)
	}
	if errors.Is(err, docker.ErrPortTaken) {
		return engine.Failed(engine.ClassConfig, "target %s: %v", t.Name, err)
	}
	return engine.Failed(engine.ClassHealth, "target %s: %v", t.Name, err)
}

func waitFailure(t target.Target, err error) engine.Result {
	if errors.Is(err, context.Canceled) {
		return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: err.Error()}
	}
	if target.IsOOM(err) {
		return engine.Failed(engine.ClassOOM, "target %s: %v", t.Name, err)
	}
	return engine.Failed(engine.ClassHealth, "target %s: %v", t.Name, err)
}

// DockerIdentityValue turns a docker identity into the Identity output.
func DockerIdentityValue(id docker.Identity) cty.Value {
	started := ""
	if !id.StartedAt.IsZero() {
		started = id.StartedAt.UTC().Format(time.RFC3339Nano)
	}
	return cty.ObjectVal(map[string]cty.Value{
		"container_id": cty.StringVal(id.ContainerID),
		"image_id":     cty.StringVal(id.ImageID),
		"incarnation":  cty.StringVal(id.Incarnation),
		"started_at":   cty.StringVal(started),
		"endpoint":     cty.StringVal(id.Endpoint),
	})
}
