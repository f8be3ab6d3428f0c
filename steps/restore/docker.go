package restore

import (
	"context"
	"errors"
	"path/filepath"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

type checkFunc func(name string, ok bool, format string, args ...any) bool

// runDocker restores a docker incumbent. The incumbent is the container the newest
// restore manifest under <state>/attempts names for this target's container (the
// one a deploy saved before stopping it); without a manifest it is the target's
// container by name, or, when that is gone too, a container created from the plan.
func runDocker(ctx context.Context, sc *engine.StepContext, t target.Target, rc *Receipt, check checkFunc) engine.Result {
	rc.Runtime = target.RuntimeDocker
	rc.DockerHost = docker.HostURL(t.DockerHost)
	c, err := target.Docker(ctx, t)
	if err != nil {
		check("connect", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	port, err := t.Port()
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	m, mpath, err := docker.FindManifest(sc.StateDir, c.Host(), t.Container)
	if err != nil {
		check("restore manifest", false, "%v", err)
		return engine.Failed(engine.ClassInternal, "%v", err)
	}
	incumbentID := t.Container
	if m != nil {
		rel, _ := filepath.Rel(sc.StateDir, mpath)
		rc.Manifest = filepath.ToSlash(rel)
		incumbentID = m.Identity.ContainerID
		check("restore manifest", true, "%s names %s (%.12s), image %s", rc.Manifest, m.Identity.Name, m.Identity.ContainerID, m.Identity.ImageID)
	}
	// Stop whatever else serves the endpoint: the candidate.
	occupants, err := c.Occupants(ctx, port)
	if err != nil {
		check("stop candidate", false, "%v", err)
		return engine.Failed(engine.ClassHealth, "%v", err)
	}
	for _, occ := range occupants {
		if occ.ContainerID == incumbentID || (m == nil && occ.Name == t.Container) {
			continue
		}
		if err := c.Stop(ctx, occ.ContainerID, deploy.StopGraceS); err != nil {
			check("stop candidate", false, "%s: %v", occ.Name, err)
			return engine.Failed(engine.ClassHealth, "stop %s: %v", occ.Name, err)
		}
		rc.Stopped = append(rc.Stopped, occ.Name+" ("+occ.ContainerID[:12]+")")
	}
	want := ""
	if m != nil {
		want = m.Identity.ImageID
	}
	if t.Image != "" {
		if w, err := target.ExpectedImageID(ctx, t); err == nil {
			want = w
		} else if want == "" {
			check("image identity", false, "%v", err)
			return engine.Failed(engine.ClassIdentity, "%v", err)
		}
	}
	id, _, err := c.Inspect(ctx, incumbentID)
	switch {
	case err == nil && id.Running():
		rc.Action = "already-running"
	case err == nil:
		rc.Action = "restarted-by-id"
		if err := c.Start(ctx, id.ContainerID); err != nil {
			return startFailed(sc, t, "", check, "start by id", "start incumbent "+id.ContainerID+" by ID", err)
		}
	case errors.Is(err, docker.ErrNoSuchContainer):
		// Gone: recreate it under its name, from the manifest if there is one.
		if old, _, err := c.Inspect(ctx, t.Container); err == nil {
			if old.Running() {
				check("recreate", false, "name %s is held by running container %.12s, not the incumbent", t.Container, old.ContainerID)
				return engine.Failed(engine.ClassIdentity, "container name %s is held by running container %.12s, not the incumbent", t.Container, old.ContainerID)
			}
			if err := c.Remove(ctx, old.ContainerID); err != nil {
				check("recreate", false, "%v", err)
				return engine.Failed(engine.ClassHealth, "%v", err)
			}
		}
		var newID string
		if m != nil {
			rc.Action = "recreated-from-manifest"
			newID, err = c.Recreate(ctx, m, t.Env)
		} else {
			rc.Action = "recreated-from-plan"
			var spec docker.Spec
			if spec, err = target.DockerSpec(t); err == nil {
				newID, err = c.Create(ctx, spec)
			}
		}
		if err != nil {
			check("recreate", false, "%v", err)
			return engine.Failed(engine.ClassHealth, "recreate %s: %v", t.Container, err)
		}
		if err := c.Start(ctx, newID); err != nil {
			return startFailed(sc, t, "", check, "start", "start recreated "+t.Container, err)
		}
		incumbentID = newID
	default:
		check("inspect", false, "%v", err)
		return engine.Failed(engine.ClassIdentity, "%v", err)
	}
	id, _, err = c.Inspect(ctx, incumbentID)
	if err != nil {
		check("inspect", false, "%v", err)
		return engine.Failed(engine.ClassIdentity, "inspect %s: %v", t.Container, err)
	}
	id.Endpoint = t.Endpoint
	rc.Container = id
	if m != nil && rc.Action != "recreated-from-manifest" {
		if !check("container identity", id.ContainerID == m.Identity.ContainerID, "running %s, recorded %s", id.ContainerID, m.Identity.ContainerID) {
			return engine.Failed(engine.ClassIdentity, "restored %s is container %s, the manifest recorded %s", t.Container, id.ContainerID, m.Identity.ContainerID)
		}
	}
	if want != "" {
		if !check("image identity", id.ImageID == want, "running %s, expected %s", id.ImageID, want) {
			return engine.Failed(engine.ClassIdentity, "restored %s runs image %s, expected %s", t.Container, id.ImageID, want)
		}
	}
	if err := target.WaitHealthyDocker(ctx, t, c, id.ContainerID); err != nil {
		check("health", false, "%v", err)
		return restoredFailure(t, err)
	}
	check("health", true, "%s%s answered 2xx", t.Endpoint, t.HealthPath)
	if r := verifyRestored(ctx, sc, t, rc, check); r != nil {
		return *r
	}
	if id, _, err = c.Inspect(ctx, id.ContainerID); err == nil {
		id.Endpoint = t.Endpoint
		rc.Container = id
	}
	rc.Outcome = "restored"
	return engine.Succeeded(deploy.DockerIdentityValue(id))
}

// restoredFailure classes a restored target that did not come up: an OOM kill is
// "oom", anything else health.
func restoredFailure(t target.Target, err error) engine.Result {
	if target.IsOOM(err) {
		return engine.Failed(engine.ClassOOM, "restored %s: %v", t.Name, err)
	}
	return engine.Failed(engine.ClassHealth, "restored %s: %v", t.Name, err)
}
