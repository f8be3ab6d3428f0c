package target

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/docker/go-units"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// Runtimes a target may run on.
const (
	RuntimeSim    = "sim"
	RuntimeDocker = "docker"
)

// Runtimes lists the runtimes a host or target may name, sorted.
func Runtimes() []string { return []string{RuntimeDocker, RuntimeKubernetes, RuntimeSim} }

// readDocker reads the attributes of the Docker runtime.
func (t *Target) readDocker(v cty.Value) error {
	var err error
	if t.Command, err = StrList(v, "command"); err != nil {
		return fmt.Errorf("target %s: command: %v", t.Name, err)
	}
	if t.Ports, err = StrList(v, "ports"); err != nil {
		return fmt.Errorf("target %s: ports: %v", t.Name, err)
	}
	if t.Mounts, err = StrList(v, "mounts"); err != nil {
		return fmt.Errorf("target %s: mounts: %v", t.Name, err)
	}
	if t.Env, err = StrMap(v, "env"); err != nil {
		return fmt.Errorf("target %s: env: %v", t.Name, err)
	}
	if t.Labels, err = StrMap(v, "labels"); err != nil {
		return fmt.Errorf("target %s: labels: %v", t.Name, err)
	}
	t.ShmSize, t.Memory, t.CPUs = Str(v, "shm_size"), Str(v, "memory"), Num(v, "cpus", 0)
	if g := attr(v, "gpus"); g != cty.NilVal && !g.IsNull() && g.IsKnown() {
		if g.Type() == cty.String || g.Type() == cty.Number {
			t.GPUs = Str(v, "gpus")
		} else if l, err := StrList(v, "gpus"); err == nil {
			t.GPUs = strings.Join(l, ",")
		} else {
			return fmt.Errorf("target %s: gpus must be \"all\", a count or a list of device IDs", t.Name)
		}
	}
	return nil
}

// StrList reads an optional list of strings.
func StrList(v cty.Value, name string) ([]string, error) {
	a := attr(v, name)
	if a == cty.NilVal || a.IsNull() || !a.IsKnown() {
		return nil, nil
	}
	c, err := convert.Convert(a, cty.List(cty.String))
	if err != nil {
		return nil, fmt.Errorf("want a list of strings: %v", err)
	}
	var out []string
	for _, e := range c.AsValueSlice() {
		if e.IsNull() {
			return nil, fmt.Errorf("null element")
		}
		out = append(out, e.AsString())
	}
	return out, nil
}

// StrMap reads an optional map of strings.
func StrMap(v cty.Value, name string) (map[string]string, error) {
	a := attr(v, name)
	if a == cty.NilVal || a.IsNull() || !a.IsKnown() {
		return nil, nil
	}
	c, err := convert.Convert(a, cty.Map(cty.String))
	if err != nil {
		return nil, fmt.Errorf("want a map of strings: %v", err)
	}
	out := map[string]string{}
	for k, e := range c.AsValueMap() {
		if !e.IsNull() {
			out[k] = e.AsString()
		}
	}
	return out, nil
}

// Port is the TCP port of the target's endpoint: the host port its container
// publishes, and what tells the current occupant apart.
func (t Target) Port() (int, error) {
	u, err := url.Parse(t.Endpoint)
	if err != nil || u.Host == "" {
		return 0, fmt.Errorf("target %s: endpoint %q is not a URL such as http://127.0.0.1:8000", t.Name, t.Endpoint)
	}
	p := u.Port()
	if p == "" {
		if u.Scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	return strconv.Atoi(p)
}

// DockerSpec is the container a docker target declares. Without ports, the
// endpoint's host:port is published to the same port in the container.
func DockerSpec(t Target) (docker.Spec, error) {
	s := docker.Spec{Name: t.Container, Image: t.Image, Command: t.Command, Env: t.Env, Ports: t.Ports, Mounts: t.Mounts, GPUs: t.GPUs, Labels: t.Labels}
	if s.Image == "" {
		return s, fmt.Errorf("target %s: a docker target needs image = \"sha256:…\" or an image reference", t.Name)
	}
	if len(s.Ports) == 0 {
		u, _ := url.Parse(t.Endpoint)
		p, err := t.Port()
		if err != nil {
			return s, err
		}
		s.Ports = []string{fmt.Sprintf("%s:%d:%d", u.Hostname(), p, p)}
	}
	var err error
	if t.ShmSize != "" {
		if s.ShmSize, err = units.RAMInBytes(t.ShmSize); err != nil {
			return s, fmt.Errorf("target %s: shm_size %q: %v", t.Name, t.ShmSize, err)
		}
	}
	if t.Memory != "" {
		if s.Memory, err = units.RAMInBytes(t.Memory); err != nil {
			return s, fmt.Errorf("target %s: memory %q: %v", t.Name, t.Memory, err)
		}
	}
	if t.CPUs > 0 {
		s.NanoCPUs = int64(t.CPUs * 1e9)
	}
	if _, _, err := s.Configs(); err != nil {
		return s, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return s, nil
}

// Docker connects to the engine of the target's host.
func Docker(ctx context.Context, t Target) (*docker.Client, error) {
	c, err := docker.Connect(ctx, t.DockerHost)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return c, nil
}

// UnknownRuntime is the error for a runtime no step knows: it lists Runtimes.
func UnknownRuntime(t Target) error {
	return fmt.Errorf("target %s: unknown runtime %q (want one of %s)", t.Name, t.Runtime, strings.Join(Runtimes(), ", "))
}

// SimIdentity turns a simulator inspect record into the shared identity record.
func SimIdentity(info sim.ContainerInfo) docker.Identity {
	return docker.Identity{
		ContainerID: info.ID, Name: info.Name, Image: info.Image, ImageID: info.ImageID,
		Created: info.Created, StartedAt: info.StartedAt, Incarnation: info.Incarnation,
		RestartCount: info.RestartCount, OOMKilled: info.OOMKilled, Status: info.Status,
		Health: info.Health, Endpoint: info.Endpoint, ExitCode: info.ExitCode,
	}
}

// Inspect returns the identity of the target's container on its runtime.
func Inspect(ctx context.Context, t Target) (docker.Identity, error) {
	switch t.Runtime {
	case RuntimeSim:
		info, err := SimInspect(t)
		if err != nil {
			return docker.Identity{}, err
		}
		return SimIdentity(info), nil
	case RuntimeDocker:
		c, err := Docker(ctx, t)
		if err != nil {
			return docker.Identity{}, err
		}
		id, _, err := c.Inspect(ctx, t.Container)
		return id, err
	case RuntimeKubernetes:
		id, _, err := KubeInspect(ctx, t)
		return id, err
	}
	return docker.Identity{}, UnknownRuntime(t)
}

// ExpectedImageID is the image ID the plan expects the target to run: image itself
// when it is an ID ("sha256:…"), the simulator profile's ID for "sim:<profile>",
// else the ID the reference resolves to on the target's engine now.
func ExpectedImageID(ctx context.Context, t Target) (string, error) {
	switch {
	case strings.HasPrefix(t.Image, "sha256:"):
		return t.Image, nil
	case t.Runtime == RuntimeSim:
		p, err := sim.LookupProfile(strings.TrimPrefix(t.Image, "sim:"))
		if err != nil {
			return "", fmt.Errorf("target %s: %w", t.Name, err)
		}
		return p.ImageID(), nil
	case t.Image == "":
		return "", nil
	case t.Runtime == RuntimeKubernetes:
		// A tag cannot be resolved through the API server: only a pinned digest is
		// known before the pods report theirs.
		return kube.Digest(t.Image), nil
	}
	c, err := Docker(ctx, t)
	if err != nil {
		return "", err
	}
	return c.ImageID(ctx, t.Image)
}

// ExitedError is a container that stopped while rigor waited for it.
type ExitedError struct {
	Identity docker.Identity
}

func (e *ExitedError) Error() string {
	if e.Identity.OOMKilled {
		return fmt.Sprintf("container %s (%.12s) was OOM-killed (exit code %d)", e.Identity.Name, e.Identity.ContainerID, e.Identity.ExitCode)
	}
	return fmt.Sprintf("container %s (%.12s) exited with code %d", e.Identity.Name, e.Identity.ContainerID, e.Identity.ExitCode)
}

func (e *ExitedError) Unwrap() error { return docker.ErrContainerExited }

// WaitHealthyDocker polls the health endpoint until it answers 2xx within the
// target's health_timeout, and gives up at once with an *ExitedError when the
// container stops meanwhile.
func WaitHealthyDocker(ctx context.Context, t Target, c *docker.Client, id string) error {
	return waitHealthy(ctx, t, func(ctx context.Context) error {
		ident, _, err := c.Inspect(ctx, id)
		if err != nil {
			return err
		}
		if !ident.Running() {
			return &ExitedError{Identity: ident}
		}
		return nil
	})
}

// IsExited reports whether err is a container that stopped, and returns it.
func IsExited(err error) (*ExitedError, bool) {
	var e *ExitedError
	ok := errors.As(err, &e)
	return e, ok
}

// IsOOM reports whether a wait failed because the target was OOM-killed: a docker
// or sim container that exited OOM-killed, or a pod's container (*kube.RolloutError).
func IsOOM(err error) bool {
	if e, ok := IsExited(err); ok && e.Identity.OOMKilled {
		return true
	}
	var re *kube.RolloutError
	return errors.As(err, &re) && re.OOM()
}
