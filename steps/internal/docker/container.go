package docker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/go-connections/nat"
)

// Spec is a container as the plan declares it.
type Spec struct {
	Name    string            `json:"name"`
	Image   string            `json:"image"`
	Command []string          `json:"command,omitempty"` // arguments to the image's entrypoint
	Env     map[string]string `json:"env,omitempty"`
	// Ports are docker -p specs: "127.0.0.1:18080:8000" or "127.0.0.1:18080:8000/tcp".
	Ports []string `json:"ports,omitempty"`
	// Mounts are bind mounts "SRC:DST" or "SRC:DST:ro".
	Mounts   []string          `json:"mounts,omitempty"`
	ShmSize  int64             `json:"shm_size,omitempty"`
	Memory   int64             `json:"memory,omitempty"` // bytes; swap is held to the same limit
	NanoCPUs int64             `json:"nano_cpus,omitempty"`
	GPUs     string            `json:"gpus,omitempty"` // "", "all", a count, or device IDs "0,1"
	Labels   map[string]string `json:"labels,omitempty"`
}

// LabelSpec is the label that carries the hash of the Spec a container was created
// from, so a later deploy can tell whether an existing container is the declared one.
const LabelSpec = "rigor.spec_sha256"

// SHA256 is the hash of the canonical JSON of the spec.
func (s Spec) SHA256() string {
	b, _ := json.Marshal(s) // maps marshal with sorted keys
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Configs builds the Engine API create configuration. The restart policy is always
// "no": a restart during a measurement must show as a failure, never be papered over.
func (s Spec) Configs() (*container.Config, *container.HostConfig, error) {
	exposed, bindings, err := nat.ParsePortSpecs(s.Ports)
	if err != nil {
		return nil, nil, fmt.Errorf("container %s: ports %v: %w", s.Name, s.Ports, err)
	}
	labels := map[string]string{}
	for k, v := range s.Labels {
		labels[k] = v
	}
	labels[LabelSpec] = s.SHA256()
	cfg := &container.Config{
		Image: s.Image, Cmd: s.Command, Env: EnvList(s.Env), ExposedPorts: exposed, Labels: labels,
	}
	hc := &container.HostConfig{
		PortBindings:  bindings,
		Binds:         s.Mounts,
		ShmSize:       s.ShmSize,
		RestartPolicy: container.RestartPolicy{Name: container.RestartPolicyDisabled},
	}
	hc.Memory = s.Memory
	if s.Memory > 0 {
		hc.MemorySwap = s.Memory
	}
	hc.NanoCPUs = s.NanoCPUs
	if dr, err := deviceRequests(s.GPUs); err != nil {
		return nil, nil, fmt.Errorf("container %s: %w", s.Name, err)
	} else if dr != nil {
		hc.DeviceRequests = dr
	}
	return cfg, hc, nil
}

func deviceRequests(gpus string) ([]container.DeviceRequest, error) {
	gpus = strings.TrimSpace(gpus)
	switch {
	case gpus == "" || gpus == "none":
		return nil, nil
	case gpus == "all":
		return []container.DeviceRequest{{Driver: "nvidia", Count: -1, Capabilities: [][]string{{"gpu"}}}}, nil
	}
	if n, err := strconv.Atoi(gpus); err == nil {
		if n < 1 {
			return nil, fmt.Errorf("gpus = %q: a count must be at least 1", gpus)
		}
		return []container.DeviceRequest{{Driver: "nvidia", Count: n, Capabilities: [][]string{{"gpu"}}}}, nil
	}
	var ids []string
	for _, p := range strings.Split(gpus, ",") {
		if p = strings.TrimSpace(p); p != "" {
			ids = append(ids, p)
		}
	}
	return []container.DeviceRequest{{Driver: "nvidia", DeviceIDs: ids, Capabilities: [][]string{{"gpu"}}}}, nil
}

// EnvList renders an env map as KEY=VALUE lines, sorted.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Create creates the container a Spec declares and returns its ID.
func (c *Client) Create(ctx context.Context, s Spec) (string, error) {
	cfg, hc, err := s.Configs()
	if err != nil {
		return "", err
	}
	return c.create(ctx, s.Name, cfg, hc)
}

func (c *Client) create(ctx context.Context, name string, cfg *container.Config, hc *container.HostConfig) (string, error) {
	r, err := c.api.ContainerCreate(ctx, cfg, hc, nil, nil, name)
	if err != nil {
		if client.IsErrNotFound(err) {
			return "", fmt.Errorf("create container %s on docker host %s: image %q not found (build it or load it first; no registry is consulted): %w", name, c.host, cfg.Image, ErrNoSuchImage)
		}
		return "", fmt.Errorf("create container %s on docker host %s: %w", name, c.host, err)
	}
	return r.ID, nil
}

// PortTakenError is a start that failed because another process or container holds
// a host port the container publishes. It is ErrPortTaken for errors.Is.
type PortTakenError struct {
	Container, Host string
	Addr            string // host address and port, e.g. 127.0.0.1:18090
}

func (e *PortTakenError) Error() string {
	return fmt.Sprintf("start container %s on docker host %s: port %s is already taken by another process or container", e.Container, e.Host, e.Addr)
}

func (e *PortTakenError) Is(target error) bool { return target == ErrPortTaken }

var portErr = regexp.MustCompile(`(?:Bind for |listen tcp[46]? )([^ ]+?):? (?:failed: port is already allocated|bind: address already in use)`)

// Start starts a container. A host port that something else holds is ErrPortTaken,
// naming the port and the container.
func (c *Client) Start(ctx context.Context, nameOrID string) error {
	err := c.api.ContainerStart(ctx, nameOrID, container.StartOptions{})
	if err == nil {
		return nil
	}
	msg := err.Error()
	if id, _, ierr := c.Inspect(ctx, nameOrID); ierr == nil {
		nameOrID = fmt.Sprintf("%s (%.12s)", id.Name, id.ContainerID)
	}
	if m := portErr.FindStringSubmatch(msg); m != nil {
		return &PortTakenError{Container: nameOrID, Host: c.host, Addr: m[1]}
	}
	if strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use") {
		return fmt.Errorf("start container %s on docker host %s: a published port is already taken (%s): %w", nameOrID, c.host, msg, ErrPortTaken)
	}
	if client.IsErrNotFound(err) {
		return fmt.Errorf("start container %q on docker host %s: %w", nameOrID, c.host, ErrNoSuchContainer)
	}
	return fmt.Errorf("start container %s on docker host %s: %w", nameOrID, c.host, err)
}

// Stop stops a container (SIGTERM, then SIGKILL after graceS) and never removes it.
func (c *Client) Stop(ctx context.Context, nameOrID string, graceS int) error {
	if err := c.api.ContainerStop(ctx, nameOrID, container.StopOptions{Timeout: &graceS}); err != nil {
		if client.IsErrNotFound(err) {
			return fmt.Errorf("stop container %q on docker host %s: %w", nameOrID, c.host, ErrNoSuchContainer)
		}
		return fmt.Errorf("stop container %s on docker host %s: %w", nameOrID, c.host, err)
	}
	return nil
}

// Remove deletes a stopped container.
func (c *Client) Remove(ctx context.Context, nameOrID string) error {
	if err := c.api.ContainerRemove(ctx, nameOrID, container.RemoveOptions{}); err != nil {
		return fmt.Errorf("remove container %s on docker host %s: %w", nameOrID, c.host, err)
	}
	return nil
}

// Occupants lists the running containers that publish a host port, sorted by name:
// who serves an endpoint now.
func (c *Client) Occupants(ctx context.Context, port int) ([]Identity, error) {
	list, err := c.api.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("status", "running"))})
	if err != nil {
		return nil, fmt.Errorf("list containers on docker host %s: %w", c.host, err)
	}
	var out []Identity
	for _, s := range list {
		for _, p := range s.Ports {
			if int(p.PublicPort) == port {
				id, _, err := c.Inspect(ctx, s.ID)
				if err != nil {
					if errors.Is(err, ErrNoSuchContainer) {
						break // gone meanwhile
					}
					return nil, err
				}
				out = append(out, id)
				break
			}
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out, nil
}
