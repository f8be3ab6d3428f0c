package sim

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"
)

// Sentinel errors of the container runtime, wrapped with the container or image named.
var (
	ErrNoSuchContainer = errors.New("no such container")
	ErrContainerExists = errors.New("container name already in use")
	ErrContainerState  = errors.New("container is in the wrong state")
	ErrBadImage        = errors.New("unsupported simulator image")
)

// Container status and health values, as Docker reports them.
const (
	StatusCreated = "created"
	StatusRunning = "running"
	StatusExited  = "exited"

	HealthHealthy   = "healthy"
	HealthUnhealthy = "unhealthy"
	HealthNone      = "none"
)

// imagePrefix is how a simulator image names its profile: "sim:incumbent".
const imagePrefix = "sim:"

// ContainerSpec is what Create needs.
type ContainerSpec struct {
	Name string
	// Image is "sim:<profile>"; the profile becomes Config.Profile.
	Image string
	// Listen is the TCP address the server binds when started, e.g. "127.0.0.1:8000".
	Listen string
	Config Config
}

// ContainerInfo is what Inspect and List report, modelled on docker inspect.
type ContainerInfo struct {
	ID        string // 64 random hex digits
	Name      string
	Image     string
	ImageID   string // "sha256:" + digest of the profile's canonical parameters
	Created   time.Time
	StartedAt time.Time // zero until first started
	// Incarnation is ID@StartedAt (RFC 3339, nanoseconds): it changes on every start or
	// restart, so "same incarnation" across a block means nothing restarted it. Empty
	// until first started.
	Incarnation  string
	RestartCount int
	OOMKilled    bool
	Status       string // StatusCreated, StatusRunning or StatusExited
	Health       string // HealthHealthy or HealthUnhealthy while running, else HealthNone
	Endpoint     string // "http://" + Listen (the bound port once started, if Listen said :0)
}

// Host is a simulated container host. Hosts are process-global and looked up by name, so
// the step that deploys a container and the gate that inspects it see the same state.
type Host struct {
	name       string
	mu         sync.Mutex
	containers map[string]*container // by ID
}

type container struct {
	info    ContainerInfo
	spec    ContainerSpec
	running *Running
}

var (
	hostsMu sync.Mutex
	hosts   = map[string]*Host{}
)

// GetHost returns the host called name, creating it on first use.
func GetHost(name string) *Host {
	hostsMu.Lock()
	defer hostsMu.Unlock()
	h, ok := hosts[name]
	if !ok {
		h = &Host{name: name, containers: map[string]*container{}}
		hosts[name] = h
	}
	return h
}

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Create registers a container without starting it.
func (h *Host) Create(spec ContainerSpec) (ContainerInfo, error) {
	if spec.Name == "" {
		return ContainerInfo{}, errors.New("sim: create: container name is empty")
	}
	profileName, ok := strings.CutPrefix(spec.Image, imagePrefix)
	if !ok {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: %w %q (want %s<profile>, profiles: %s)",
			spec.Name, ErrBadImage, spec.Image, imagePrefix, strings.Join(ProfileNames(), ", "))
	}
	prof, err := LookupProfile(profileName)
	if err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: image %q: %w", spec.Name, spec.Image, err)
	}
	if spec.Config.Profile != (Profile{}) && spec.Config.Profile != prof {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: %w: Config.Profile %q differs from image %q",
			spec.Name, ErrBadImage, spec.Config.Profile.Name, spec.Image)
	}
	spec.Config.Profile = prof
	if _, err := spec.Config.normalized(); err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: %w", spec.Name, err)
	}
	if _, _, err := net.SplitHostPort(spec.Listen); err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: listen address %q: %w", spec.Name, spec.Listen, err)
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.containers {
		if c.info.Name == spec.Name {
			return ContainerInfo{}, fmt.Errorf("sim: create %q on host %q: %w (id %s)", spec.Name, h.name, ErrContainerExists, c.info.ID)
		}
	}
	c := &container{spec: spec, info: ContainerInfo{
		ID:       newContainerID(),
		Name:     spec.Name,
		Image:    spec.Image,
		ImageID:  prof.ImageID(),
		Created:  time.Now().Round(0),
		Status:   StatusCreated,
		Health:   HealthNone,
		Endpoint: "http://" + spec.Listen,
	}}
	h.containers[c.info.ID] = c
	return c.snapshot(), nil
}

// Start starts a created or exited container's server. Starting a running container is a
// no-op, as with docker start.
func (h *Host) Start(nameOrID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	if c.info.Status == StatusRunning {
		return nil
	}
	return c.startLocked(false)
}

// Stop stops a running container; stopping a stopped one is a no-op.
func (h *Host) Stop(nameOrID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	return c.stopLocked()
}

// Remove deletes a container that is not running.
func (h *Host) Remove(nameOrID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	if c.info.Status == StatusRunning {
		return fmt.Errorf("sim: remove container %q: %w: it is running; stop it first", c.info.Name, ErrContainerState)
	}
	delete(h.containers, c.info.ID)
	return nil
}

// Inspect reports a container's state.
func (h *Host) Inspect(nameOrID string) (ContainerInfo, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return ContainerInfo{}, err
	}
	return c.snapshot(), nil
}

// List reports every container on the host, sorted by name.
func (h *Host) List() []ContainerInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]ContainerInfo, 0, len(h.containers))
	for _, c := range h.containers {
		out = append(out, c.snapshot())
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Name < out[k].Name })
	return out
}

// Server returns a running container's server, for fault injection and stats.
func (h *Host) Server(nameOrID string) (*Server, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return nil, err
	}
	if c.running == nil {
		return nil, fmt.Errorf("sim: container %q: %w: it is %s", c.info.Name, ErrContainerState, c.info.Status)
	}
	return c.running.Server(), nil
}

// InjectFaults sets a container's fault injection: at once if it is running, and for
// every later start or restart (unlike Server.SetFaults, which a restart forgets).
func (h *Host) InjectFaults(nameOrID string, f Faults) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	if err := f.validate(); err != nil {
		return fmt.Errorf("sim: container %q: %w", c.info.Name, err)
	}
	c.spec.Config.Faults = f
	if c.running != nil {
		return c.running.Server().SetFaults(f)
	}
	return nil
}

// InjectRestart restarts a running container's server as a crash-looping engine would:
// in-flight requests are dropped, StartedAt (and so the incarnation) changes and
// RestartCount goes up. The prefix cache and native counters start from zero again.
func (h *Host) InjectRestart(nameOrID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	if c.info.Status != StatusRunning {
		return fmt.Errorf("sim: restart container %q: %w: it is %s", c.info.Name, ErrContainerState, c.info.Status)
	}
	if err := c.stopLocked(); err != nil {
		return err
	}
	return c.startLocked(true)
}

// InjectOOM kills a running container as the kernel's OOM killer would: its server stops,
// OOMKilled is set and the status becomes exited.
func (h *Host) InjectOOM(nameOrID string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, err := h.lookupLocked(nameOrID)
	if err != nil {
		return err
	}
	if c.info.Status != StatusRunning {
		return fmt.Errorf("sim: OOM-kill container %q: %w: it is %s", c.info.Name, ErrContainerState, c.info.Status)
	}
	if err := c.stopLocked(); err != nil {
		return err
	}
	c.info.OOMKilled = true
	return nil
}

func (h *Host) lookupLocked(nameOrID string) (*container, error) {
	if c, ok := h.containers[nameOrID]; ok {
		return c, nil
	}
	for _, c := range h.containers {
		if c.info.Name == nameOrID {
			return c, nil
		}
	}
	return nil, fmt.Errorf("sim: container %q on host %q: %w", nameOrID, h.name, ErrNoSuchContainer)
}

func (c *container) startLocked(restart bool) error {
	rn, err := Listen(c.spec.Listen, c.spec.Config)
	if err != nil {
		c.info.Status = StatusExited
		if errors.Is(err, ErrPortInUse) {
			_, port, _ := net.SplitHostPort(c.spec.Listen)
			return fmt.Errorf("sim: start container %q: port %s (%s) is in use: %w", c.info.Name, port, c.spec.Listen, ErrPortInUse)
		}
		return fmt.Errorf("sim: start container %q: %w", c.info.Name, err)
	}
	started := time.Now().Round(0) // wall clock only: it is compared and printed, never subtracted
	if !started.After(c.info.StartedAt) {
		started = c.info.StartedAt.Add(time.Nanosecond) // incarnations must differ
	}
	c.running = rn
	c.info.Endpoint = rn.URL() // the real port when Listen asked for ":0"
	c.info.Status = StatusRunning
	c.info.StartedAt = started
	c.info.Incarnation = c.info.ID + "@" + started.UTC().Format(time.RFC3339Nano)
	c.info.OOMKilled = false // docker start clears it; a fresh incarnation has not been killed
	if restart {
		c.info.RestartCount++
	}
	return nil
}

func (c *container) stopLocked() error {
	if c.running == nil {
		return nil
	}
	err := c.running.Close()
	c.running = nil
	c.info.Status = StatusExited
	if err != nil {
		return fmt.Errorf("sim: stop container %q: %w", c.info.Name, err)
	}
	return nil
}

func (c *container) snapshot() ContainerInfo {
	info := c.info
	info.Health = HealthNone
	if c.running != nil {
		info.Health = HealthHealthy
		if c.running.Server().Faults().Unhealthy {
			info.Health = HealthUnhealthy
		}
	}
	return info
}

func newContainerID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("sim: no randomness for a container ID: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}
