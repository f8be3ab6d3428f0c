package docker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/client"
)

// Identity is what rigor records and compares about a container: the fields of
// docker inspect that say whether it is the same thing that was measured.
type Identity struct {
	ContainerID string    `json:"container_id"`
	Name        string    `json:"name"`
	Image       string    `json:"image"`    // the reference it was created from
	ImageID     string    `json:"image_id"` // sha256:… of the image it runs
	Created     time.Time `json:"created"`
	StartedAt   time.Time `json:"started_at"`
	// Incarnation is ContainerID@StartedAt: it changes on every start, so the same
	// incarnation before and after a block means nothing restarted the container.
	Incarnation  string `json:"incarnation"`
	RestartCount int    `json:"restart_count"`
	OOMKilled    bool   `json:"oom_killed"`
	Status       string `json:"status"`
	Health       string `json:"health"` // healthy, unhealthy, starting, or none
	ExitCode     int    `json:"exit_code"`
	Endpoint     string `json:"endpoint,omitempty"`
}

// Running reports whether the container is running.
func (id Identity) Running() bool { return id.Status == "running" }

// IdentityOf turns an inspect response into an Identity.
func IdentityOf(r container.InspectResponse) Identity {
	id := Identity{Health: "none"}
	if r.ContainerJSONBase != nil {
		id.ContainerID = r.ID
		id.Name = strings.TrimPrefix(r.Name, "/")
		id.ImageID = r.Image
		id.RestartCount = r.RestartCount
		id.Created, _ = time.Parse(time.RFC3339Nano, r.Created)
		if s := r.State; s != nil {
			id.Status = string(s.Status)
			id.OOMKilled = s.OOMKilled
			id.ExitCode = s.ExitCode
			id.StartedAt, _ = time.Parse(time.RFC3339Nano, s.StartedAt)
			if s.Health != nil && s.Health.Status != "" {
				id.Health = string(s.Health.Status)
			}
			if !id.StartedAt.IsZero() && id.StartedAt.Year() > 1 {
				id.Incarnation = r.ID + "@" + s.StartedAt
			} else {
				id.StartedAt = time.Time{}
			}
		}
	}
	if r.Config != nil {
		id.Image = r.Config.Image
	}
	return id
}

// Inspect returns a container's identity and its full inspect JSON. A missing
// container is ErrNoSuchContainer, naming it and the host.
func (c *Client) Inspect(ctx context.Context, nameOrID string) (Identity, []byte, error) {
	r, raw, err := c.api.ContainerInspectWithRaw(ctx, nameOrID, false)
	if err != nil {
		if client.IsErrNotFound(err) {
			return Identity{}, nil, fmt.Errorf("container %q not found on docker host %s: %w", nameOrID, c.host, ErrNoSuchContainer)
		}
		return Identity{}, nil, fmt.Errorf("inspect container %q on docker host %s: %w", nameOrID, c.host, err)
	}
	return IdentityOf(r), raw, nil
}

// ImageID resolves an image reference (tag or ID) to its ID. A missing image is
// ErrNoSuchImage, naming it and the host.
func (c *Client) ImageID(ctx context.Context, ref string) (string, error) {
	r, err := c.api.ImageInspect(ctx, ref)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", fmt.Errorf("image %q not found on docker host %s: %w", ref, c.host, ErrNoSuchImage)
		}
		return "", fmt.Errorf("inspect image %q on docker host %s: %w", ref, c.host, err)
	}
	return r.ID, nil
}
