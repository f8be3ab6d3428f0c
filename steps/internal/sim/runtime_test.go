package sim

import (
	"errors"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
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

func healthStatus(endpoint string) (int, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(endpoint + "/health")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

func TestContainerLifecycle(t *testing.T) {
	h := GetHost("lifecycle-" + t.Name())
	if GetHost("lifecycle-"+t.Name()) != h {
		t.Fatal("GetHost returned a different host for the same name")
	}
	addr := freeAddr(t)
	info, err := h.Create(ContainerSpec{Name: "flare-ctl", Image: "sim:flare", Listen: addr, Config: Config{TimeScale: fastScale}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop("flare-ctl"); _ = h.Remove("flare-ctl") })
	flare, _ := LookupProfile("flare")
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(info.ID) {
		t.Errorf("ID %q is not 64 hex digits", info.ID)
	}
	if info.ImageID != flare.ImageID() || !strings.HasPrefix(info.ImageID, "sha256:") || len(info.ImageID) != 71 {
		t.Errorf("ImageID %q, want %q", info.ImageID, flare.ImageID())
	}
	if info.Status != StatusCreated || info.Health != HealthNone || info.Incarnation != "" || info.Endpoint != "http://"+addr {
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
	if first.Status != StatusRunning || first.Health != HealthHealthy || first.Incarnation != info.ID+"@"+first.StartedAt.UTC().Format(time.RFC3339Nano) {
		t.Errorf("started: %+v", first)
	}
	if code, err := healthStatus(first.Endpoint); err != nil || code != 200 {
		t.Errorf("health %d %v", code, err)
	}
	srv, err := h.Server("flare-ctl")
	if err != nil {
		t.Fatal(err)
	}
	_ = srv.SetFaults(Faults{Unhealthy: true})
	if got, _ := h.Inspect("flare-ctl"); got.Health != HealthUnhealthy {
		t.Errorf("health %q with the unhealthy fault", got.Health)
	}

	if err := h.InjectRestart("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	restarted, _ := h.Inspect("flare-ctl")
	if restarted.RestartCount != 1 || !restarted.StartedAt.After(first.StartedAt) || restarted.Incarnation == first.Incarnation ||
		restarted.ID != first.ID || restarted.Status != StatusRunning || restarted.Health != HealthHealthy {
		t.Errorf("after restart: %+v (before %+v)", restarted, first)
	}
	if code, err := healthStatus(restarted.Endpoint); err != nil || code != 200 {
		t.Errorf("health after restart %d %v", code, err)
	}
	// Host-level faults outlive a restart.
	if err := h.InjectFaults("flare-ctl", Faults{Unhealthy: true}); err != nil {
		t.Fatal(err)
	}
	if err := h.InjectRestart("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Inspect("flare-ctl"); got.Health != HealthUnhealthy || got.RestartCount != 2 {
		t.Errorf("after a second restart with injected faults: %+v", got)
	}
	if code, _ := healthStatus(restarted.Endpoint); code != http.StatusServiceUnavailable {
		t.Errorf("health %d, want 503", code)
	}
	if err := h.InjectFaults("flare-ctl", Faults{}); err != nil {
		t.Fatal(err)
	}

	if err := h.InjectOOM("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	oom, _ := h.Inspect("flare-ctl")
	if !oom.OOMKilled || oom.Status != StatusExited || oom.Health != HealthNone {
		t.Errorf("after OOM: %+v", oom)
	}
	if _, err := healthStatus(oom.Endpoint); err == nil {
		t.Error("an OOM-killed container still answers")
	}
	if err := h.InjectOOM("flare-ctl"); !errors.Is(err, ErrContainerState) {
		t.Errorf("OOM of an exited container: %v", err)
	}

	if err := h.Start("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	again, _ := h.Inspect("flare-ctl")
	if again.OOMKilled || again.Incarnation == restarted.Incarnation {
		t.Errorf("after start: %+v", again)
	}
	if err := h.Remove("flare-ctl"); !errors.Is(err, ErrContainerState) {
		t.Errorf("remove running: %v", err)
	}
	if err := h.Stop("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	if err := h.Remove("flare-ctl"); err != nil {
		t.Fatal(err)
	}
	_, err = h.Inspect("flare-ctl")
	if !errors.Is(err, ErrNoSuchContainer) || !strings.Contains(err.Error(), `"flare-ctl"`) {
		t.Errorf("inspect removed: %v", err)
	}
}

func TestContainerErrors(t *testing.T) {
	h := GetHost("errors-" + t.Name())
	addr := freeAddr(t)
	if _, err := h.Create(ContainerSpec{Name: "a", Image: "sim:incumbent", Listen: addr}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, c := range h.List() {
			_ = h.Stop(c.ID)
			_ = h.Remove(c.ID)
		}
	})
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
		if got, _ := h.Inspect("twin"); got.Status != StatusExited {
			t.Errorf("twin status %q", got.Status)
		}
		_, err = Listen(addr, Config{})
		if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen: %v, want ErrPortInUse naming %s", err, addr)
		}
	})
	t.Run("not found", func(t *testing.T) {
		for name, op := range map[string]func(string) error{"start": h.Start, "stop": h.Stop, "remove": h.Remove, "restart": h.InjectRestart, "oom": h.InjectOOM} {
			if err := op("ghost"); !errors.Is(err, ErrNoSuchContainer) || !strings.Contains(err.Error(), `"ghost"`) {
				t.Errorf("%s: %v", name, err)
			}
		}
	})
	t.Run("list is sorted", func(t *testing.T) {
		var names []string
		for _, c := range h.List() {
			names = append(names, c.Name)
		}
		if strings.Join(names, ",") != "a,twin" {
			t.Errorf("List names %v", names)
		}
	})
}

// Many goroutines inspecting, listing and restarting one host must not race (run with -race).
func TestHostConcurrentUse(t *testing.T) {
	h := GetHost("concurrent-" + t.Name())
	if _, err := h.Create(ContainerSpec{Name: "c", Image: "sim:incumbent", Listen: "127.0.0.1:0"}); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("c"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Stop("c"); _ = h.Remove("c") })
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; k < 5; k++ {
				switch i % 3 {
				case 0:
					if err := h.InjectRestart("c"); err != nil {
						t.Error(err)
					}
				case 1:
					_, _ = h.Inspect("c")
				default:
					_ = h.List()
				}
			}
		}(i)
	}
	wg.Wait()
	if got, _ := h.Inspect("c"); got.RestartCount != 15 {
		t.Errorf("RestartCount %d, want 15", got.RestartCount)
	}
}
