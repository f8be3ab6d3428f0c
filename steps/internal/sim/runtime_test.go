package sim

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// testHost is a host in a temporary directory whose servers are stopped when the
// test ends (package simtest does the same for other packages).
func testHost(t *testing.T) *Host {
	t.Helper()
	h, err := OpenHost("h", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h.StopGrace = 2 * time.Second
	t.Cleanup(func() {
		if _, err := h.StopAll(); err != nil {
			t.Errorf("stop all: %v", err)
		}
	})
	return h
}

// started creates and starts an incumbent container called name on any free port.
func started(t *testing.T, h *Host, name string) ContainerInfo {
	t.Helper()
	return startedOn(t, h, name, "127.0.0.1:0")
}

// startedOn creates and starts an incumbent container called name listening on addr.
func startedOn(t *testing.T, h *Host, name, addr string) ContainerInfo {
	t.Helper()
	if _, err := h.Create(ContainerSpec{Name: name, Image: "sim:incumbent", Listen: addr}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start(name); err != nil {
		t.Fatal(err)
	}
	info, err := h.Inspect(name)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

// health returns the status of GET /health and the incarnation that answered.
func health(endpoint string) (int, string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(endpoint + "/health")
	if err != nil {
		return 0, "", err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(IncarnationHeader), nil
}

func TestContainerLifecycle(t *testing.T) {
	h := testHost(t)
	addr := freeAddr(t)
	info, err := h.Create(ContainerSpec{Name: "flare-ctl", Image: "sim:flare", Listen: addr, Config: Config{TimeScale: fastScale}})
	if err != nil {
		t.Fatal(err)
	}
	flare, _ := LookupProfile("flare")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(info.ID) {
		t.Errorf("ID %q is not 64 hex digits", info.ID)
	}
	if info.ImageID != flare.ImageID() || !strings.HasPrefix(info.ImageID, "sha256:") || len(info.ImageID) != 71 {
		t.Errorf("ImageID %q, want %q", info.ImageID, flare.ImageID())
	}
	if info.Status != StatusCreated || info.Health != HealthNone || info.Incarnation != "" || info.Endpoint != "http://"+addr || info.PID != 0 {
		t.Errorf("created: %+v", info)
	}

	if err := h.Start("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	first, _ := h.Inspect(info.ID)
	byName, _ := h.Inspect("flare-ctl")
	if first != byName {
		t.Error("inspect by ID and by name differ")
	}
	wantInc := info.ID + "@" + first.StartedAt.UTC().Format(time.RFC3339Nano) + "/pid-" + strconv.Itoa(first.PID)
	if first.Status != StatusRunning || first.Health != HealthHealthy || first.PID == os.Getpid() || first.Incarnation != wantInc {
		t.Errorf("started: %+v (want incarnation %s)", first, wantInc)
	}
	// The server is its own process, and every answer names its incarnation.
	if code, inc, err := health(first.Endpoint); err != nil || code != 200 || inc != first.Incarnation {
		t.Errorf("health %d %v, incarnation header %q, want %q", code, err, inc, first.Incarnation)
	}
	if err := h.InjectFaults("flare-ctl", Faults{Unhealthy: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Inspect("flare-ctl"); got.Health != HealthUnhealthy {
		t.Errorf("health %q with the unhealthy fault", got.Health)
	}
	if code, _, _ := health(first.Endpoint); code != http.StatusServiceUnavailable {
		t.Errorf("the running server answers %d with the unhealthy fault, want 503", code)
	}

	if err := h.InjectRestart("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	restarted, _ := h.Inspect("flare-ctl")
	if restarted.RestartCount != 1 || !restarted.StartedAt.After(first.StartedAt) || restarted.Incarnation == first.Incarnation ||
		restarted.PID == first.PID || restarted.ID != first.ID || restarted.Status != StatusRunning {
		t.Errorf("after restart: %+v (before %+v)", restarted, first)
	}
	// Injected faults outlive a restart.
	if code, inc, _ := health(restarted.Endpoint); code != http.StatusServiceUnavailable || inc != restarted.Incarnation {
		t.Errorf("after restart: health %d from %q, want 503 from %q", code, inc, restarted.Incarnation)
	}
	if err := h.InjectFaults("flare-ctl", Faults{}); err != nil {
		t.Fatal(err)
	}

	if err := h.InjectOOM("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	oom, _ := h.Inspect("flare-ctl")
	if !oom.OOMKilled || oom.Status != StatusExited || oom.Health != HealthNone || oom.ExitCode != 137 || oom.FinishedAt.IsZero() {
		t.Errorf("after OOM: %+v", oom)
	}
	if _, _, err := health(oom.Endpoint); err == nil {
		t.Error("an OOM-killed container still answers")
	}
	if err := h.InjectOOM("flare-ctl"); !errors.Is(err, ErrContainerState) {
		t.Errorf("OOM of an exited container: %v", err)
	}

	if err := h.Start("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	again, _ := h.Inspect("flare-ctl")
	if again.OOMKilled || again.Incarnation == restarted.Incarnation || again.Status != StatusRunning {
		t.Errorf("after start: %+v", again)
	}
	if err := h.Remove("flare-ctl"); !errors.Is(err, ErrContainerState) {
		t.Errorf("remove running: %v", err)
	}
	if err := h.Stop("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	stopped, _ := h.Inspect("flare-ctl")
	if stopped.Status != StatusExited || stopped.ExitCode != 0 || stopped.Incarnation != again.Incarnation {
		t.Errorf("after stop: %+v", stopped)
	}
	log, _ := os.ReadFile(stopped.Log)
	if !strings.Contains(string(log), "serving container flare-ctl") || !strings.Contains(string(log), "stopping on terminated") {
		t.Errorf("server log lacks the start and the stop:\n%s", log)
	}
	if err := h.Remove("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Inspect("flare-ctl")
	if !errors.Is(err, ErrNoSuchContainer) || !strings.Contains(err.Error(), `"flare-ctl"`) {
		t.Errorf("inspect removed: %v", err)
	}
}

// The server process is started in a session of its own with nothing from the
// caller's environment but the variable that makes it serve.
func TestServerProcessIsDetached(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	t.Setenv("RIGOR_VAR_api_key", "secret-that-must-not-reach-the-server")
	h := testHost(t)
	info := started(t, h, "c")
	env, err := os.ReadFile("/proc/" + strconv.Itoa(info.PID) + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	want := ChildEnv + "=" + filepath.Join(h.Dir(), "c")
	if got := strings.Split(strings.TrimRight(string(env), "\x00"), "\x00"); len(got) != 1 || got[0] != want {
		t.Errorf("server environment %q, want only %q", got, want)
	}
	sid, _, errno := syscall.RawSyscall(syscall.SYS_GETSID, uintptr(info.PID), 0, 0)
	if errno != 0 || int(sid) != info.PID {
		t.Errorf("server session %d (%v), want its own (%d): a Ctrl-C or a kill of the caller's group would reach it", sid, errno, info.PID)
	}
}

// starterEnv makes the test binary start one container and kill itself (see TestMain).
const starterEnv = "SIM_TEST_START_AND_DIE"

func TestMain(m *testing.M) {
	if dir := os.Getenv(starterEnv); dir != "" {
		// A rigor process that starts a server and is then SIGKILLed, as an apply is.
		h, err := OpenHost("h", dir)
		for _, name := range []string{"survivor", "orphan"} {
			if err == nil {
				_, err = h.Create(ContainerSpec{Name: name, Image: "sim:incumbent", Listen: "127.0.0.1:0", Config: Config{TimeScale: fastScale}})
			}
			if err == nil {
				err = h.Start(name)
			}
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
	os.Exit(m.Run())
}

// A server outlives the process that started it, as a container outlives a crashed
// apply; another process sees it running, with the same identity, and stops it.
func TestServerSurvivesItsStarter(t *testing.T) {
	h := testHost(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), starterEnv+"="+h.Dir())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the starter should have died of SIGKILL: %v\n%s", err, out)
	}
	info, err := h.Inspect("survivor")
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != StatusRunning || info.PID == cmd.Process.Pid {
		t.Fatalf("after its starter was killed: %+v", info)
	}
	if code, inc, err := health(info.Endpoint); err != nil || code != 200 || inc != info.Incarnation {
		t.Fatalf("survivor health %d %v from %q, want 200 from %q", code, err, inc, info.Incarnation)
	}
	if err := h.Stop("survivor"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Inspect("survivor"); got.Status != StatusExited || got.ExitCode != 0 {
		t.Errorf("after stop by another process: %+v", got)
	}
	// Killed from outside while no rigor process watched: gone, and how is unknown.
	orphan, _ := h.Inspect("orphan")
	if err := syscall.Kill(orphan.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for got, _ := h.Inspect("orphan"); got.Status == StatusRunning && time.Now().Before(deadline); got, _ = h.Inspect("orphan") {
		time.Sleep(5 * time.Millisecond)
	}
	if got, _ := h.Inspect("orphan"); got.Status != StatusExited || got.ExitCode != ExitUnknown {
		t.Errorf("killed unseen: %+v; want exited with exit code %d (unknown)", got, ExitUnknown)
	}
}

// A server that died is exited, never running, even when nobody saw it die, and even
// when its pid now belongs to another process.
func TestDeadServerIsExited(t *testing.T) {
	h := testHost(t)
	info := started(t, h, "c")
	if err := syscall.Kill(info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	got, _ := h.Inspect("c")
	for got.Status == StatusRunning && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		got, _ = h.Inspect("c")
	}
	if got.Status != StatusExited || got.Health != HealthNone {
		t.Fatalf("after an outside SIGKILL: %+v", got)
	}

	t.Run("recycled pid", func(t *testing.T) {
		// A live process that is not the server now holds the recorded pid.
		sleeper := exec.Command("sleep", "30")
		if err := sleeper.Start(); err != nil {
			t.Skip("no sleep command:", err)
		}
		t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
		rec, err := h.read("c")
		if err != nil {
			t.Fatal(err)
		}
		rec.PID = sleeper.Process.Pid
		if err := h.write(rec); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat("/proc/self/stat"); err != nil {
			t.Skip("without /proc a recycled pid cannot be told apart")
		}
		if got, _ := h.Inspect("c"); got.Status != StatusExited {
			t.Errorf("a live process with the recorded pid but another start time is taken for the server: %+v", got)
		}
		if err := h.Stop("c"); err != nil {
			t.Fatal(err)
		}
		if sleeper.ProcessState != nil || syscall.Kill(sleeper.Process.Pid, 0) != nil {
			t.Error("Stop signalled a process that is not the server")
		}
	})
}

func TestContainerErrors(t *testing.T) {
	h := testHost(t)
	addr := freeAddr(t)
	if _, err := h.Create(ContainerSpec{Name: "a", Image: "sim:incumbent", Listen: addr}); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		spec     ContainerSpec
		wantErr  error
		mentions string
	}{
		"duplicate name":   {ContainerSpec{Name: "a", Image: "sim:incumbent", Listen: addr}, ErrContainerExists, `"a"`},
		"unknown profile":  {ContainerSpec{Name: "b", Image: "sim:nope", Listen: addr}, ErrUnknownProfile, "flare, incumbent"},
		"not a sim image":  {ContainerSpec{Name: "b", Image: "vllm/vllm-openai:latest", Listen: addr}, ErrBadImage, "sim:"},
		"profile mismatch": {ContainerSpec{Name: "b", Image: "sim:flare", Listen: addr, Config: Config{Profile: builtinProfiles["incumbent"]}}, ErrBadImage, "incumbent"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := h.Create(tc.spec)
			if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.mentions) {
				t.Errorf("err %v, want %v mentioning %s", err, tc.wantErr, tc.mentions)
			}
		})
	}
	t.Run("bad names", func(t *testing.T) {
		for _, name := range []string{"", "../escape", "a/b", "-x"} {
			if _, err := h.Create(ContainerSpec{Name: name, Image: "sim:incumbent", Listen: addr}); err == nil {
				t.Errorf("container name %q accepted", name)
			}
		}
		if _, err := OpenHost("../up", t.TempDir()); err == nil {
			t.Error("host name ../up accepted")
		}
	})
	t.Run("port in use", func(t *testing.T) {
		if err := h.Start("a"); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Create(ContainerSpec{Name: "twin", Image: "sim:incumbent", Listen: addr}); err != nil {
			t.Fatal(err)
		}
		_, port, _ := net.SplitHostPort(addr)
		err := h.Start("twin")
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "port "+port) {
			t.Errorf("err %v, want ErrPortInUse naming port %s", err, port)
		}
		if got, _ := h.Inspect("twin"); got.Status != StatusExited || got.ExitCode != 1 {
			t.Errorf("twin: %+v", got)
		}
		_, err = Listen(addr, Config{})
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen: %v, want ErrPortInUse naming %s", err, addr)
		}
	})
	t.Run("not found", func(t *testing.T) {
		for name, op := range map[string]func(string) error{"start": h.Start, "stop": h.Stop, "remove": h.Remove, "restart": h.InjectRestart, "oom": h.InjectOOM, "kill": h.Kill} {
			if err := op("ghost"); !errors.Is(err, ErrNoSuchContainer) || !strings.Contains(err.Error(), `"ghost"`) {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	t.Run("list is sorted and hosts are found", func(t *testing.T) {
		list, err := h.List()
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range list {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != "a,twin" {
			t.Errorf("List names %v", names)
		}
		hosts, err := Hosts(filepath.Dir(h.Dir()))
		if err != nil || len(hosts) != 1 || hosts[0].Name() != "h" {
			t.Errorf("Hosts: %v %v", hosts, err)
		}
	})
}

// Goroutines and processes inspecting, listing and restarting one host must not race
// (run with -race): the lock serialises them, and no restart is lost.
func TestHostConcurrentUse(t *testing.T) {
	h := testHost(t)
	started(t, h, "c")
	// A second handle on the same directory stands for another rigor process.
	other, err := OpenHost("h", h.Dir())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			hh := h
			if i%2 == 1 {
				hh = other
			}
			for k := 0; k < 2; k++ {
				switch i % 3 {
				case 0:
					if err := hh.InjectRestart("c"); err != nil {
						t.Error(err)
					}
				case 1:
					if got, err := hh.Inspect("c"); err != nil || got.Status == StatusCreated {
						t.Errorf("inspect during restarts: %+v %v", got, err)
					}
				default:
					_, _ = hh.List()
				}
			}
		}(i)
	}
	wg.Wait()
	if got, _ := h.Inspect("c"); got.RestartCount != 4 || got.Status != StatusRunning {
		t.Errorf("after 4 restarts: %+v", got)
	}
}

func TestDefaultRoot(t *testing.T) {
	cases := map[string]struct {
		runtime, cache, want string
	}{
		"the runtime dir first":         {runtime: "/run/user/7", cache: "/c", want: "/run/user/7/rigor/sim"},
		"then the user cache dir":       {cache: "/c", want: "/c/rigor/sim"},
		"a relative runtime dir is not": {runtime: "rel", cache: "/c", want: "/c/rigor/sim"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", tc.runtime)
			t.Setenv("XDG_CACHE_HOME", tc.cache)
			if got := DefaultRoot(); got != tc.want {
				t.Errorf("DefaultRoot() = %q, want %q", got, tc.want)
			}
		})
	}
}

// Every setting of the server's Config crosses into the server process: a container
// created for SGLang serves SGLang's metric names and its cache reset path.
func TestContainerConfigReachesTheServer(t *testing.T) {
	h := testHost(t)
	if _, err := h.Create(ContainerSpec{Name: "sg", Image: "sim:incumbent", Listen: "127.0.0.1:0",
		Config: Config{Engine: EngineSGLang, ModelName: "served-as-this", TimeScale: 0.01}}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("sg"); err != nil {
		t.Fatal(err)
	}
	info, err := h.Inspect("sg")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		resp, err := http.Get(info.Endpoint + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := new(strings.Builder)
		_, _ = io.Copy(b, resp.Body)
		return b.String()
	}
	if m := get("/metrics"); !strings.Contains(m, "sglang:") || strings.Contains(m, "vllm:") {
		t.Fatalf("the server process must imitate SGLang's metric names:\n%.400s", m)
	}
	if models := get("/v1/models"); !strings.Contains(models, "served-as-this") {
		t.Fatalf("the model name must reach the server process: %s", models)
	}
	resp, err := http.Post(info.Endpoint+"/flush_cache", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("SGLang's /flush_cache answered %s", resp.Status)
	}
}

// forgetPID makes name's record look as it does when its starter died between
// starting the server and recording its pid.
func forgetPID(t *testing.T, h *Host, name string) {
	t.Helper()
	path := filepath.Join(h.path(name), recordFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	orphaned := regexp.MustCompile(`"pid": \d+,`).ReplaceAll(b, []byte(`"pid": 0,`))
	if err := os.WriteFile(path, orphaned, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A starter that dies after its server began but before it recorded the server's
// pid leaves a server no record names: the next Start adopts it (from the
// server.json it wrote once listening) instead of starting a second server that
// would fail on the port.
func TestStartAdoptsAnOrphanServer(t *testing.T) {
	h := testHost(t)
	first := started(t, h, "orphan")
	forgetPID(t, h, "orphan")
	if info, _ := h.Inspect("orphan"); info.Status == StatusRunning {
		t.Fatal("a record without a pid must not read as running")
	}
	if err := h.Start("orphan"); err != nil {
		t.Fatalf("start must adopt the orphan, not fail on its port: %v", err)
	}
	info, err := h.Inspect("orphan")
	if err != nil || info.Status != StatusRunning || info.Incarnation != first.Incarnation {
		t.Fatalf("adopted %+v (%v), want the first server's incarnation %s running", info, err, first.Incarnation)
	}
}

// A starter can die after its server began and before either recorded anything:
// no record names the server and it has not written server.json yet, so there is
// nothing to adopt. Start stops it rather than fail on the port it holds as if
// another program held it (a resume's deploy once failed that way).
func TestStartStopsAnUnrecordedServer(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("finding a server by its command line needs /proc")
	}
	h := testHost(t)
	// A fixed port, as a target has: a second server fails on it while the first runs.
	first := startedOn(t, h, "early", freeAddr(t))
	forgetPID(t, h, "early")
	// StopAll cannot reach a server its record no longer names.
	t.Cleanup(func() { _ = syscall.Kill(first.PID, syscall.SIGKILL) })
	if err := os.Remove(filepath.Join(h.path("early"), serverFile)); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("early"); err != nil {
		t.Fatalf("start must stop the unrecorded server, not fail on its port: %v", err)
	}
	info, err := h.Inspect("early")
	if err != nil || info.Status != StatusRunning || info.PID == first.PID || info.Incarnation == first.Incarnation {
		t.Fatalf("started %+v (%v), want a new server running in place of pid %d", info, err, first.PID)
	}
	if processAlive(first.PID, 0) {
		t.Errorf("the unrecorded server (pid %d) still runs", first.PID)
	}
}

// Stop sends SIGTERM and, when the server has not ended within StopGrace (10 s by
// default, as the README says), SIGKILL: a server that cannot take SIGTERM (here a
// stopped process) ends all the same, with exit code 137.
func TestStopKillsAServerThatIgnoresSIGTERM(t *testing.T) {
	if h, err := OpenHost("d", t.TempDir()); err != nil || h.StopGrace != 10*time.Second {
		t.Fatalf("default StopGrace %v (%v), want 10s", h.StopGrace, err)
	}
	h := testHost(t)
	h.StopGrace = 500 * time.Millisecond
	info := started(t, h, "deaf")
	if err := syscall.Kill(info.PID, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := h.Stop("deaf"); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	after, err := h.Inspect("deaf")
	if err != nil {
		t.Fatal(err)
	}
	if after.Status != StatusExited || after.ExitCode != 137 || took < h.StopGrace {
		t.Errorf("after stop: %s, exit code %d, after %v; want exited 137 after the %v grace", after.Status, after.ExitCode, took, h.StopGrace)
	}
}
