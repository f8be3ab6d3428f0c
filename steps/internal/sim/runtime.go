package sim

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
	"github.com/rigor-bench/rigor/engine/atomicfile"
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

// ExitUnknown is the exit code of a server that died while no rigor process watched
// it and without writing its own exit record (a SIGKILL from outside, say): the
// runtime knows it is gone, not how it ended.
const ExitUnknown = -1

// imagePrefix is how a simulator image names its profile: "sim:incumbent".
const imagePrefix = "sim:"

// ContainerSpec is what Create needs.
type ContainerSpec struct {
	Name string
	// Image is "sim:<profile>"; the profile becomes Config.Profile.
	Image string
	// Listen is the TCP address the server binds when started, e.g. "127.0.0.1:8000".
	Listen string
	// Config is the server's configuration. It crosses a process boundary, so
	// Config.OnChunk must be nil and Config.Incarnation empty (each start draws one).
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
	// PID is the server process of the last start; 0 until first started.
	PID int
	// Incarnation is ID@StartedAt/pid-PID (StartedAt in RFC 3339 with nanoseconds): it
	// changes on every start or restart, so "same incarnation" across a block means
	// nothing restarted the server. The server returns it in the IncarnationHeader of
	// every response. Empty until first started.
	Incarnation  string
	RestartCount int
	OOMKilled    bool
	Status       string // StatusCreated, StatusRunning or StatusExited
	Health       string // HealthHealthy or HealthUnhealthy while running, else HealthNone
	Endpoint     string // "http://" + the bound address (the real port if Listen said :0)
	// Spec is the digest of what the container was created from (image, listen
	// address, server configuration), as ContainerSpec.SHA256 computes it: a
	// deploy reuses a container only when it equals the declared spec's, as a
	// Docker deploy compares its spec label.
	Spec string
	// ExitCode and FinishedAt describe the last exit once the server has exited:
	// 0 for a stop, 128+signal for a kill (137 after SIGKILL, OOM included), 1 when
	// it could not serve, ExitUnknown when nobody saw how it ended.
	ExitCode   int
	FinishedAt time.Time
	// Log is the server's stdout and stderr, appended across starts.
	Log string
}

// Host is a directory of simulator containers. Each running container is its own
// server process (its own session, so neither a SIGKILL of rigor nor a Ctrl-C in its
// terminal reaches it): it outlives the rigor process that started it, exactly as a
// Docker container does, and any rigor process that opens the same directory sees,
// stops and restarts it. Operations are serialised across processes by a lock file in
// the directory.
type Host struct {
	name string
	dir  string
	mu   sync.RWMutex // this process's side of the lock; the flock is the other processes'

	// StopGrace is how long Stop waits after SIGTERM before SIGKILL (default 10 s).
	StopGrace time.Duration
	// StartTimeout bounds the wait for a started server to listen (default 30 s).
	StartTimeout time.Duration
}

// Files of a container directory <host dir>/<name>/.
const (
	recordFile = "container.json" // written by rigor processes, under the host lock
	serverFile = "server.json"    // written once by the server process when it listens
	// exit-<pid>.json is written once per start, by whoever first saw the exit.
	ackFile  = "faults.ack" // the fault generation the server applied last
	logFile  = "server.log"
	lockFile = ".lock"
	hostFile = ".host" // the host's name
)

var validName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// DefaultRoot is where hosts live when a plan names no directory:
// $XDG_RUNTIME_DIR/rigor/sim (cleared at logout and reboot, like the processes it
// describes), else <user cache dir>/rigor/sim, else <temp dir>/rigor-sim-<uid>.
func DefaultRoot() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "rigor", "sim")
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "rigor", "sim")
	}
	return filepath.Join(os.TempDir(), "rigor-sim-"+strconv.Itoa(os.Getuid()))
}

// OpenHost opens the host called name whose state lives in dir; an empty dir means
// DefaultRoot()/name. Nothing is written until a container is created: inspecting a
// host that has none leaves no trace.
func OpenHost(name, dir string) (*Host, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("sim: host name %q: use letters, digits, '_', '.' and '-'", name)
	}
	if dir == "" {
		dir = filepath.Join(DefaultRoot(), name)
	}
	return &Host{name: name, dir: dir, StopGrace: 10 * time.Second, StartTimeout: 30 * time.Second}, nil
}

// Hosts opens every host under root (DefaultRoot() when empty) that holds at least
// one container, sorted by name: what `rigor sim ps` lists.
func Hosts(root string) ([]*Host, error) {
	if root == "" {
		root = DefaultRoot()
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	var out []*Host
	for _, e := range entries {
		if !e.IsDir() || !validName.MatchString(e.Name()) {
			continue
		}
		h, err := OpenDir(filepath.Join(root, e.Name()))
		if err != nil {
			return nil, err
		}
		if names, _ := h.names(); len(names) > 0 {
			out = append(out, h)
		}
	}
	return out, nil
}

// OpenDir opens the host whose state directory is dir, under the name it was
// created with (the directory's name when it has none recorded).
func OpenDir(dir string) (*Host, error) {
	name := filepath.Base(dir)
	if b, err := os.ReadFile(filepath.Join(dir, hostFile)); err == nil && validName.MatchString(strings.TrimSpace(string(b))) {
		name = strings.TrimSpace(string(b))
	} else if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("sim: host directory: %w", err)
	}
	return OpenHost(name, dir)
}

// Name is the host's name.
func (h *Host) Name() string { return h.name }

// Dir is the host's state directory.
func (h *Host) Dir() string { return h.dir }

// containerConfig is the part of Config that crosses to the server process; the
// profile comes from the image.
type containerConfig struct {
	ModelName         string  `json:"model_name,omitempty"`
	Seed              uint64  `json:"seed,omitempty"`
	TimeScale         float64 `json:"time_scale,omitempty"`
	ReasoningField    string  `json:"reasoning_field,omitempty"`
	Engine            string  `json:"engine,omitempty"`
	MaxRunning        int     `json:"max_running,omitempty"`
	PrefixCacheTokens int     `json:"prefix_cache_tokens,omitempty"`
	TokensPerChunk    int     `json:"tokens_per_chunk,omitempty"`
	Faults            Faults  `json:"faults"`
}

// record is container.json: what rigor knows about a container.
type record struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Image   string          `json:"image"`
	ImageID string          `json:"image_id"`
	Created time.Time       `json:"created"`
	Listen  string          `json:"listen"`
	Config  containerConfig `json:"config"`
	// FaultsGeneration counts fault changes; a running server acknowledges each.
	FaultsGeneration int  `json:"faults_generation"`
	RestartCount     int  `json:"restart_count"`
	OOMKilled        bool `json:"oom_killed"`
	// The last start: the server process and when it started.
	PID         int       `json:"pid,omitempty"`
	StartTicks  uint64    `json:"start_ticks,omitempty"` // /proc/<pid>/stat starttime: tells a recycled pid apart
	StartedAt   time.Time `json:"started_at"`
	Incarnation string    `json:"incarnation,omitempty"`
	Endpoint    string    `json:"endpoint"`
}

// serverState is server.json, written by the server once it listens.
type serverState struct {
	PID         int       `json:"pid"`
	StartTicks  uint64    `json:"start_ticks"`
	StartedAt   time.Time `json:"started_at"`
	Incarnation string    `json:"incarnation"`
	Addr        string    `json:"addr"`
}

// exitState is exit.json.
type exitState struct {
	PID        int       `json:"pid"`
	ExitCode   int       `json:"exit_code"`
	FinishedAt time.Time `json:"finished_at"`
	Error      string    `json:"error,omitempty"`
	PortInUse  bool      `json:"port_in_use,omitempty"`
}

// SHA256 digests what a container made from the spec would run: two specs with the
// same digest serve the same profile, on the same address, configured alike.
func (spec ContainerSpec) SHA256() string {
	return specDigest(spec.Image, spec.Listen, spec.Config.toContainer())
}

func specDigest(image, listen string, c containerConfig) string {
	// containerConfig is plain data (strings, numbers, bools): Marshal cannot fail.
	b, _ := json.Marshal(struct {
		Image, Listen string
		Config        containerConfig
	}{image, listen, c})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (c Config) toContainer() containerConfig {
	return containerConfig{ModelName: c.ModelName, Seed: c.Seed, TimeScale: c.TimeScale, ReasoningField: c.ReasoningField, Engine: c.Engine,
		MaxRunning: c.MaxRunning, PrefixCacheTokens: c.PrefixCacheTokens, TokensPerChunk: c.TokensPerChunk, Faults: c.Faults}
}

func (r *record) config() (Config, error) {
	prof, err := LookupProfile(strings.TrimPrefix(r.Image, imagePrefix))
	if err != nil {
		return Config{}, err
	}
	c := r.Config
	return Config{Profile: prof, ModelName: c.ModelName, Seed: c.Seed, TimeScale: c.TimeScale, ReasoningField: c.ReasoningField, Engine: c.Engine,
		MaxRunning: c.MaxRunning, PrefixCacheTokens: c.PrefixCacheTokens, TokensPerChunk: c.TokensPerChunk, Faults: c.Faults}, nil
}

// Create registers a container without starting it.
func (h *Host) Create(spec ContainerSpec) (ContainerInfo, error) {
	if !validName.MatchString(spec.Name) {
		return ContainerInfo{}, fmt.Errorf("sim: create: container name %q: use letters, digits, '_', '.' and '-'", spec.Name)
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
	if spec.Config.OnChunk != nil || spec.Config.Incarnation != "" {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: Config.OnChunk and Config.Incarnation cannot cross to a server process", spec.Name)
	}
	spec.Config.Profile = prof
	if _, err := spec.Config.normalized(); err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: %w", spec.Name, err)
	}
	if _, _, err := net.SplitHostPort(spec.Listen); err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: listen address %q: %w", spec.Name, spec.Listen, err)
	}
	unlock, err := h.lock()
	if err != nil {
		return ContainerInfo{}, err
	}
	defer unlock()
	if old, err := h.read(spec.Name); err == nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q on host %q: %w (id %s)", spec.Name, h.name, ErrContainerExists, old.ID)
	}
	rec := &record{
		ID: newContainerID(), Name: spec.Name, Image: spec.Image, ImageID: prof.ImageID(),
		Created: time.Now().UTC().Round(0), Listen: spec.Listen, Config: spec.Config.toContainer(),
		Endpoint: "http://" + spec.Listen,
	}
	if err := os.MkdirAll(h.path(rec.Name), 0o755); err != nil {
		return ContainerInfo{}, fmt.Errorf("sim: create %q: %w", spec.Name, err)
	}
	if err := h.write(rec); err != nil {
		return ContainerInfo{}, err
	}
	return h.info(rec), nil
}

// Start starts a created or exited container's server process and returns once it
// listens. Starting a running container is a no-op, as with docker start.
func (h *Host) Start(nameOrID string) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	if h.running(rec) {
		return nil
	}
	if h.adoptOrphan(rec) {
		return nil
	}
	return h.spawn(rec, false)
}

// Stop stops a running container (SIGTERM, then SIGKILL after StopGrace); stopping a
// stopped one is a no-op.
func (h *Host) Stop(nameOrID string) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	return h.stop(rec)
}

// Kill ends a running container's server with SIGKILL, as a crash would: in-flight
// requests are cut, the status becomes exited (137) and nothing else changes.
func (h *Host) Kill(nameOrID string) error {
	return h.killWith(nameOrID, "kill", false)
}

// Remove deletes a container that is not running.
func (h *Host) Remove(nameOrID string) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	if h.running(rec) {
		return fmt.Errorf("sim: remove container %q: %w: it is running; stop it first", rec.Name, ErrContainerState)
	}
	if err := os.RemoveAll(h.path(rec.Name)); err != nil {
		return fmt.Errorf("sim: remove container %q: %w", rec.Name, err)
	}
	return nil
}

// Inspect reports a container's state. A server process that died is exited,
// never running: the recorded pid must be alive and be the process that started
// (its start time is compared, so a recycled pid is not taken for the server).
func (h *Host) Inspect(nameOrID string) (ContainerInfo, error) {
	unlock, err := h.rlock()
	if err != nil {
		return ContainerInfo{}, err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return ContainerInfo{}, err
	}
	return h.info(rec), nil
}

// List reports every container on the host, sorted by name.
func (h *Host) List() ([]ContainerInfo, error) {
	unlock, err := h.rlock()
	if err != nil {
		return nil, err
	}
	defer unlock()
	names, err := h.names()
	if err != nil {
		return nil, err
	}
	out := make([]ContainerInfo, 0, len(names))
	for _, n := range names {
		rec, err := h.read(n)
		if err != nil {
			continue // removed meanwhile
		}
		out = append(out, h.info(rec))
	}
	return out, nil
}

// InjectFaults sets a container's fault injection: at once if it is running (the
// server acknowledges it before InjectFaults returns), and for every later start.
func (h *Host) InjectFaults(nameOrID string, f Faults) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	if err := f.Validate(); err != nil {
		return fmt.Errorf("sim: container %q: %w", rec.Name, err)
	}
	rec.Config.Faults = f
	rec.FaultsGeneration++
	if err := h.write(rec); err != nil {
		return err
	}
	if !h.running(rec) {
		return nil
	}
	return h.reloadFaults(rec)
}

// InjectRestart restarts a running container as a crash-looping engine would: the
// server is killed (in-flight requests are dropped), a new process starts, StartedAt
// and so the incarnation change and RestartCount goes up. The prefix cache and
// native counters start from zero again.
func (h *Host) InjectRestart(nameOrID string) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	if !h.running(rec) {
		return fmt.Errorf("sim: restart container %q: %w: it is %s", rec.Name, ErrContainerState, h.info(rec).Status)
	}
	if err := h.kill(rec); err != nil {
		return err
	}
	return h.spawn(rec, true)
}

// InjectOOM kills a running container as the kernel's OOM killer would: its server
// gets SIGKILL, OOMKilled is set, the status becomes exited with code 137.
func (h *Host) InjectOOM(nameOrID string) error {
	return h.killWith(nameOrID, "OOM-kill", true)
}

func (h *Host) killWith(nameOrID, what string, oom bool) error {
	unlock, err := h.lock()
	if err != nil {
		return err
	}
	defer unlock()
	rec, err := h.lookup(nameOrID)
	if err != nil {
		return err
	}
	if !h.running(rec) {
		return fmt.Errorf("sim: %s container %q: %w: it is %s", what, rec.Name, ErrContainerState, h.info(rec).Status)
	}
	if oom {
		// Recorded before the kill, so no observer sees the exit without the flag.
		rec.OOMKilled = true
		if err := h.write(rec); err != nil {
			return err
		}
	}
	return h.kill(rec)
}

// info derives a container's state from its record and its process.
func (h *Host) info(rec *record) ContainerInfo {
	info := ContainerInfo{
		ID: rec.ID, Name: rec.Name, Image: rec.Image, ImageID: rec.ImageID, Created: rec.Created,
		StartedAt: rec.StartedAt, PID: rec.PID, Incarnation: rec.Incarnation, RestartCount: rec.RestartCount,
		OOMKilled: rec.OOMKilled, Status: StatusCreated, Health: HealthNone, Endpoint: rec.Endpoint,
		Spec: specDigest(rec.Image, rec.Listen, rec.Config),
		Log:  filepath.Join(h.path(rec.Name), logFile),
	}
	switch {
	case rec.PID == 0:
	case h.running(rec):
		info.Status, info.Health = StatusRunning, HealthHealthy
		if rec.Config.Faults.Unhealthy {
			info.Health = HealthUnhealthy
		}
	default:
		info.Status, info.ExitCode = StatusExited, ExitUnknown
		if ex, err := readExitOf(h.path(rec.Name), rec.PID); err == nil {
			info.ExitCode, info.FinishedAt = ex.ExitCode, ex.FinishedAt
		}
	}
	// What the server wrote when it listened is authoritative for its start, even
	// when the rigor process that started it died before copying it to the record.
	if st, err := readServer(h.path(rec.Name)); err == nil && rec.PID > 0 && st.PID == rec.PID {
		info.StartedAt, info.Incarnation, info.Endpoint = st.StartedAt, st.Incarnation, "http://"+st.Addr
	}
	return info
}

func (h *Host) running(rec *record) bool {
	return rec.PID > 0 && processAlive(rec.PID, rec.StartTicks)
}

// lock serialises operations on the host: within this process and across processes.
// It creates the host's directory on first use, with the host's name in it, so that
// `rigor sim ps` reports the host a plan declared even when its directory is named
// otherwise.
func (h *Host) lock() (func(), error) {
	h.mu.Lock()
	if err := os.MkdirAll(h.dir, 0o755); err != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("sim: host %s: state directory: %w", h.name, err)
	}
	if _, err := os.Stat(filepath.Join(h.dir, hostFile)); errors.Is(err, fs.ErrNotExist) {
		_ = os.WriteFile(filepath.Join(h.dir, hostFile), []byte(h.name+"\n"), 0o644)
	}
	fl := flock.New(filepath.Join(h.dir, lockFile))
	if err := fl.Lock(); err != nil {
		h.mu.Unlock()
		return nil, fmt.Errorf("sim: host %s: lock %s: %w", h.name, h.dir, err)
	}
	return func() { _ = fl.Unlock(); h.mu.Unlock() }, nil
}

// rlock is the shared side of lock: Inspect and List wait for an operation in
// progress (a restart is seen before or after, never halfway), and see each other
// concurrently. A host whose directory does not exist yet has nothing to lock.
func (h *Host) rlock() (func(), error) {
	h.mu.RLock()
	if _, err := os.Stat(h.dir); errors.Is(err, fs.ErrNotExist) {
		return h.mu.RUnlock, nil
	}
	fl := flock.New(filepath.Join(h.dir, lockFile))
	if err := fl.RLock(); err != nil {
		h.mu.RUnlock()
		return nil, fmt.Errorf("sim: host %s: lock %s: %w", h.name, h.dir, err)
	}
	return func() { _ = fl.Unlock(); h.mu.RUnlock() }, nil
}

func (h *Host) path(name string) string { return filepath.Join(h.dir, name) }

// names lists the containers of the host, sorted.
func (h *Host) names() ([]string, error) {
	entries, err := os.ReadDir(h.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sim: host %s: %w", h.name, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			if _, err := os.Stat(filepath.Join(h.dir, e.Name(), recordFile)); err == nil {
				out = append(out, e.Name())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

func (h *Host) read(name string) (*record, error) {
	if !validName.MatchString(name) {
		return nil, fmt.Errorf("sim: container %q on host %q: %w", name, h.name, ErrNoSuchContainer)
	}
	rec, err := readRecord(h.path(name))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("sim: container %q on host %q: %w", name, h.name, ErrNoSuchContainer)
	}
	return rec, err
}

// lookup finds a container by name or by ID.
func (h *Host) lookup(nameOrID string) (*record, error) {
	if rec, err := h.read(nameOrID); err == nil || !errors.Is(err, ErrNoSuchContainer) {
		return rec, err
	}
	names, err := h.names()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if rec, err := h.read(n); err == nil && rec.ID == nameOrID {
			return rec, nil
		}
	}
	return nil, fmt.Errorf("sim: container %q on host %q: %w", nameOrID, h.name, ErrNoSuchContainer)
}

func readRecord(dir string) (*record, error) {
	b, err := os.ReadFile(filepath.Join(dir, recordFile))
	if err != nil {
		return nil, err
	}
	var rec record
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("sim: %s: %w", filepath.Join(dir, recordFile), err)
	}
	return &rec, nil
}

func (h *Host) write(rec *record) error {
	if err := writeFileAtomic(filepath.Join(h.path(rec.Name), recordFile), rec); err != nil {
		return fmt.Errorf("sim: container %q: %w", rec.Name, err)
	}
	return nil
}

// writeFileAtomic writes v as JSON to a temporary file and renames it into place, so
// a reader sees the old or the new content, never half of one.
func writeFileAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.Write(path, append(b, '\n'), 0o600)
}

// incarnationOf names one start of a container's server.
func incarnationOf(id string, started time.Time, pid int) string {
	return fmt.Sprintf("%s@%s/pid-%d", id, started.UTC().Format(time.RFC3339Nano), pid)
}

func newContainerID() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("sim: no randomness for a container ID: " + err.Error())
	}
	return hex.EncodeToString(b[:])
}

// StopAll stops every running container of the host (what a crashed campaign left
// running) and returns the names it stopped, sorted.
func (h *Host) StopAll() ([]string, error) {
	list, err := h.List()
	if err != nil {
		return nil, err
	}
	var stopped []string
	var errs []error
	for _, c := range list {
		if c.Status != StatusRunning {
			continue
		}
		if err := h.Stop(c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		stopped = append(stopped, c.Name)
	}
	return stopped, errors.Join(errs...)
}
