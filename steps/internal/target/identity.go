package target

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/kube"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// readIdentity reads the attributes that say how a target's identity is held: the
// sim runtime's state directory (host sim_dir), the incarnation header
// (identity_header) and the protected files.
func (t *Target) readIdentity(v cty.Value) error {
	if h := attr(v, "host"); h != cty.NilVal && !h.IsNull() && h.Type().IsObjectType() {
		t.SimDir = Str(h, "sim_dir")
		if t.SimDir != "" && !filepath.IsAbs(t.SimDir) {
			return fmt.Errorf("target %s: host %s: sim_dir %q must be an absolute path", t.Name, t.Host, t.SimDir)
		}
	}
	// Absent means the simulator's header; "" turns the check off for a stack that
	// sends nothing of the kind (a header that is never sent proves nothing).
	t.IdentityHeader = sim.IncarnationHeader
	if a := attr(v, "identity_header"); a != cty.NilVal && !a.IsNull() {
		if !a.IsKnown() || a.Type() != cty.String {
			return fmt.Errorf("target %s: identity_header must be a header name such as %q, or \"\"", t.Name, sim.IncarnationHeader)
		}
		t.IdentityHeader = a.AsString()
		if err := CheckIdentityHeader(t.IdentityHeader); err != nil {
			return fmt.Errorf("target %s: %v", t.Name, err)
		}
	}
	var err error
	if t.ProtectedFiles, err = StrList(v, "protected_files"); err != nil {
		return fmt.Errorf("target %s: protected_files: %v", t.Name, err)
	}
	return nil
}

// CheckIdentityHeader refuses an identity_header that is not a header name ("" is
// allowed: it turns the check off).
func CheckIdentityHeader(h string) error {
	if strings.ContainsAny(h, ": \r\n") {
		return fmt.Errorf("identity_header %q is not a header name", h)
	}
	return nil
}

// SimHost opens the sim runtime host a target runs on.
func SimHost(t Target) (*sim.Host, error) {
	h, err := sim.OpenHost(t.Host, t.SimDir)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", t.Name, err)
	}
	return h, nil
}

// Seen is a target's identity at one moment, as deploy, identity, restore and block
// record it in their outputs: which container, from which image, in which
// incarnation (Docker: container ID and StartedAt; sim: container ID, StartedAt and
// server pid), answering at which endpoint.
type Seen struct {
	ContainerID string `json:"container_id"`
	ImageID     string `json:"image_id"`
	Incarnation string `json:"incarnation"`
	Endpoint    string `json:"endpoint,omitempty"` // "" when the step does not record it
}

// SeenOf reads a Seen from a step's outputs; ok is false when they carry no identity
// (a step that failed before it saw the target, or a journal from before blocks
// recorded one).
func SeenOf(outputs cty.Value) (s Seen, ok bool) {
	if outputs == cty.NilVal || outputs.IsNull() || !outputs.IsKnown() || !outputs.Type().IsObjectType() {
		return Seen{}, false
	}
	s = Seen{ContainerID: Str(outputs, "container_id"), ImageID: Str(outputs, "image_id"),
		Incarnation: Str(outputs, "incarnation"), Endpoint: strings.TrimRight(Str(outputs, "endpoint"), "/")}
	return s, s.ContainerID != "" && s.Incarnation != ""
}

// SeenNow is the Seen of an inspect record.
func SeenNow(t Target, id docker.Identity) Seen {
	return Seen{ContainerID: id.ContainerID, ImageID: id.ImageID, Incarnation: id.Incarnation, Endpoint: t.Endpoint}
}

// Changes lists what differs between a recorded identity and a later one, each as
// "what: recorded → now"; an empty recorded image is not compared.
func (s Seen) Changes(now Seen) []string {
	var out []string
	if s.ContainerID != now.ContainerID {
		out = append(out, fmt.Sprintf("container_id %s → %s", s.ContainerID, now.ContainerID))
	}
	if s.ImageID != "" && s.ImageID != now.ImageID {
		out = append(out, fmt.Sprintf("image_id %s → %s", s.ImageID, now.ImageID))
	}
	if s.Incarnation != now.Incarnation {
		out = append(out, fmt.Sprintf("incarnation %s → %s", s.Incarnation, now.Incarnation))
	}
	return out
}

// RefreshKey is what a deploy, identity or restore puts in place: a target serving an
// endpoint on one runtime host. The engine refreshes only the latest succeeded step
// per key.
func RefreshKey(config cty.Value) string {
	t, err := FromValue(config.GetAttr("target"))
	if err != nil {
		return ""
	}
	host := t.Host
	switch t.Runtime {
	case RuntimeDocker:
		host = docker.HostURL(t.DockerHost)
	case RuntimeKubernetes:
		host = kubeHost(t)
	case RuntimeSim:
		if h, err := SimHost(t); err == nil {
			host = h.Dir()
		}
	}
	return fmt.Sprintf("%s %s %s", t.Runtime, host, t.Endpoint)
}

// Refresh re-inspects the target a step's configuration names and compares it with the
// identity the step recorded: a container that is gone, no longer running, or another
// container, image or incarnation than recorded is an error that names what changed.
func Refresh(ctx context.Context, config, outputs cty.Value) error {
	t, err := FromValue(config.GetAttr("target"))
	if err != nil {
		return err
	}
	rec, ok := SeenOf(outputs)
	if !ok {
		return fmt.Errorf("target %s: the journal recorded no identity for container %s, so it cannot be vouched for", t.Name, t.Container)
	}
	id, err := Inspect(ctx, t)
	if errors.Is(err, sim.ErrNoSuchContainer) || errors.Is(err, docker.ErrNoSuchContainer) || errors.Is(err, kube.ErrNoSuchWorkload) {
		return fmt.Errorf("target %s: container %s is gone (the journal recorded container_id %s, incarnation %s)", t.Name, t.Container, rec.ContainerID, rec.Incarnation)
	}
	if err != nil {
		return fmt.Errorf("target %s: %w", t.Name, err)
	}
	if ch := rec.Changes(SeenNow(t, id)); len(ch) > 0 {
		return fmt.Errorf("target %s: container %s changed since the journal recorded it: %s", t.Name, t.Container, strings.Join(ch, "; "))
	}
	if !id.Running() {
		return fmt.Errorf("target %s: container %s is %s (exit code %d), the journal recorded it running as incarnation %s", t.Name, t.Container, id.Status, id.ExitCode, rec.Incarnation)
	}
	if id.OOMKilled {
		return fmt.Errorf("target %s: container %s was OOM-killed", t.Name, t.Container)
	}
	return nil
}

// Placement names the target a step's configuration puts in place or runs against
// (engine.Placer, engine.RunsAgainst): its host, container and image, so a deploy of
// the candidate and a block against the candidate name the same thing, and the
// incumbent's deploy does not.
func Placement(config cty.Value) string {
	if !config.Type().IsObjectType() || !config.Type().HasAttribute("target") {
		return ""
	}
	t, err := FromValue(config.GetAttr("target"))
	if err != nil {
		return ""
	}
	return t.Host + "/" + t.Container + "@" + t.Image
}
