package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/google/go-cmp/cmp"
)

func TestConnectErrorsNameTheHost(t *testing.T) {
	cases := map[string]struct {
		host string
		want error
	}{
		"closed tcp port": {"tcp://127.0.0.1:1", ErrUnreachable},
		"missing socket":  {"unix:///nonexistent/rigor-test.sock", ErrUnreachable},
		// ssh:// dials through the local ssh client; nothing listens on port 1.
		"ssh, no sshd":         {"ssh://rigor@127.0.0.1:1", ErrUnreachable},
		"ssh option smuggling": {"ssh://-oProxyCommand=sh", ErrSSHUnsupported},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Connect(context.Background(), tc.host)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.host) {
				t.Fatalf("Connect(%s) = %v; want %v naming the host", tc.host, err, tc.want)
			}
		})
	}
}

func TestTarContextIsDeterministic(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Dockerfile", "FROM scratch\n")
	write("sub/a.txt", "a")
	_, sum1, err := TarContext(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Touching a file's time changes nothing; changing its content does.
	os.Chtimes(filepath.Join(dir, "sub/a.txt"), time.Unix(1, 0), time.Unix(1, 0))
	_, sum2, _ := TarContext(dir)
	write("sub/a.txt", "b")
	_, sum3, _ := TarContext(dir)
	if sum1 != sum2 || sum1 == sum3 {
		t.Fatalf("sums: %s %s %s; want the first two equal and the third different", sum1, sum2, sum3)
	}
	files, err := ContextFiles(dir)
	if diff := cmp.Diff([]string{"Dockerfile", "sub/a.txt"}, files); err != nil || diff != "" {
		t.Fatalf("ContextFiles: %v %s", err, diff)
	}
	if _, _, err := TarContext(filepath.Join(dir, "nope")); !errors.Is(err, ErrContextMissing) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("missing context: %v", err)
	}
}

func TestSpecConfigs(t *testing.T) {
	s := Spec{Name: "c", Image: "sha256:abc", Command: []string{"--x"}, Env: map[string]string{"B": "2", "A": "1"},
		Ports: []string{"127.0.0.1:18080:8000"}, Mounts: []string{"/data:/data:ro"}, ShmSize: 1 << 20, Memory: 32 << 20, GPUs: "all"}
	cfg, hc, err := s.Configs()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"A=1", "B=2"}, cfg.Env); diff != "" {
		t.Error(diff)
	}
	if hc.RestartPolicy.Name != container.RestartPolicyDisabled || hc.MemorySwap != hc.Memory || hc.Memory != 32<<20 {
		t.Errorf("restart %q, memory %d swap %d", hc.RestartPolicy.Name, hc.Memory, hc.MemorySwap)
	}
	b := hc.PortBindings["8000/tcp"]
	if len(b) != 1 || b[0].HostIP != "127.0.0.1" || b[0].HostPort != "18080" {
		t.Errorf("port bindings %+v", hc.PortBindings)
	}
	if len(hc.DeviceRequests) != 1 || hc.DeviceRequests[0].Count != -1 || hc.DeviceRequests[0].Driver != "nvidia" {
		t.Errorf("gpus all: %+v", hc.DeviceRequests)
	}
	if cfg.Labels[LabelSpec] != s.SHA256() {
		t.Errorf("spec label %q", cfg.Labels[LabelSpec])
	}
	s2 := s
	s2.Env = map[string]string{"A": "1", "B": "3"}
	if s2.SHA256() == s.SHA256() {
		t.Error("a changed env must change the spec hash")
	}
	if dr, err := deviceRequests("2"); err != nil || dr[0].Count != 2 {
		t.Errorf("gpus 2: %+v %v", dr, err)
	}
	if dr, err := deviceRequests("0, 1"); err != nil || !cmp.Equal(dr[0].DeviceIDs, []string{"0", "1"}) {
		t.Errorf("gpus 0,1: %+v %v", dr, err)
	}
	if _, _, err := (Spec{Name: "c", Ports: []string{"not a port"}}).Configs(); err == nil {
		t.Error("a bad port spec must fail")
	}
}

func TestManifestRedactsSecretsAndFindsNewest(t *testing.T) {
	raw := []byte(`{"Id":"abc","Name":"/inc","Image":"sha256:1","Config":{"Image":"inc:1","Env":["API_KEY=s3cret","PORT=8000","X=tok-value"]},"HostConfig":{}}`)
	id := Identity{ContainerID: "abc", Name: "inc", ImageID: "sha256:1"}
	m, err := NewManifest("unix:///s", id, raw, "tok-value")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(m.Inspect), "s3cret") || strings.Contains(string(m.Inspect), "tok-value") || !strings.Contains(string(m.Inspect), "PORT=8000") {
		t.Fatalf("inspect after redaction: %s", m.Inspect)
	}
	if diff := cmp.Diff([]string{"API_KEY", "X"}, m.RedactedEnv); diff != "" {
		t.Error(diff)
	}
	state := t.TempDir()
	put := func(rel string, v any) {
		p := filepath.Join(state, "attempts", rel, ManifestFile)
		os.MkdirAll(filepath.Dir(p), 0o755)
		b, _ := json.Marshal(v)
		os.WriteFile(p, b, 0o644)
	}
	older := *m
	older.SavedAt = m.SavedAt.Add(-1e9)
	older.Identity.ContainerID = "old"
	other := *m
	other.Identity.Name = "someone-else"
	put("deploy.a/1", older)
	put("deploy.b/1", m)
	put("deploy.c/1", other)
	put("deploy.sim/1", map[string]any{"ID": "x", "Name": "inc"}) // a simulator manifest
	got, path, err := FindManifest(state, "unix:///s", "inc")
	if err != nil || got == nil || got.Identity.ContainerID != "abc" || !strings.Contains(path, "deploy.b") {
		t.Fatalf("FindManifest = %+v, %s, %v; want the newest manifest of inc (deploy.b)", got, path, err)
	}
	if got, _, _ := FindManifest(state, "tcp://elsewhere:2375", "inc"); got != nil {
		t.Errorf("a manifest of another host was chosen: %+v", got.Identity)
	}
	if got, _, err := FindManifest(t.TempDir(), "", "inc"); got != nil || err != nil {
		t.Errorf("empty state: %v %v", got, err)
	}
}

func TestIdentityOf(t *testing.T) {
	var r container.InspectResponse
	raw := `{"Id":"abc","Name":"/inc","Image":"sha256:1","Created":"2026-01-02T03:04:05.5Z","RestartCount":2,
		"State":{"Status":"running","Running":true,"OOMKilled":true,"StartedAt":"2026-01-02T03:04:06.123456789Z","Health":{"Status":"healthy"}},
		"Config":{"Image":"inc:1"}}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatal(err)
	}
	id := IdentityOf(r)
	if id.Incarnation != "abc@2026-01-02T03:04:06.123456789Z" || id.Name != "inc" || id.ImageID != "sha256:1" || id.Image != "inc:1" ||
		id.RestartCount != 2 || !id.OOMKilled || id.Health != "healthy" || !id.Running() || id.Created.IsZero() {
		t.Fatalf("IdentityOf = %+v", id)
	}
	r.State.StartedAt = "0001-01-01T00:00:00Z"
	if id := IdentityOf(r); id.Incarnation != "" || !id.StartedAt.IsZero() {
		t.Errorf("a never-started container has no incarnation: %+v", id)
	}
}

func TestPortErrorNamesThePort(t *testing.T) {
	for _, msg := range []string{
		"driver failed programming external connectivity on endpoint x: Bind for 127.0.0.1:18080 failed: port is already allocated",
		"Error starting userland proxy: listen tcp4 127.0.0.1:18080: bind: address already in use",
	} {
		m := portErr.FindStringSubmatch(msg)
		if m == nil || m[1] != "127.0.0.1:18080" {
			t.Errorf("%q: %v", msg, m)
		}
	}
}

// TestBuildSendsTheLimits: the build request carries the plan's CPU and memory
// limits (as a CPU quota over a 100 ms period, and memory with swap held to it),
// the labels and tags, and the legacy builder's removal of its own containers.
// A stand-in Engine API records the request; a FROM-scratch build on a real
// engine starts no container the limits could be read from.
func TestBuildSendsTheLimits(t *testing.T) {
	var query url.Values
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasSuffix(r.URL.Path, "/_ping"):
			w.Header().Set("Api-Version", "1.45")
			fmt.Fprint(w, "OK")
		case strings.HasSuffix(r.URL.Path, "/build"):
			query = r.URL.Query()
			_, _ = io.Copy(io.Discard, r.Body)
			fmt.Fprintln(w, `{"stream":"Step 1/1 : FROM scratch"}`)
			fmt.Fprintln(w, `{"aux":{"ID":"sha256:`+strings.Repeat("ab", 32)+`"}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := Connect(context.Background(), "tcp://"+strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	ctxDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(ctxDir, "Dockerfile"), []byte("FROM scratch\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := c.Build(context.Background(), BuildOptions{Context: ctxDir, Tags: []string{"x:1"}, Labels: map[string]string{"rigor.test": "1"},
		NanoCPUs: 1_500_000_000, Memory: 512 << 20}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.ImageID != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("image ID %q", res.ImageID)
	}
	want := map[string]string{"cpuperiod": "100000", "cpuquota": "150000", "memory": "536870912", "memswap": "536870912", "forcerm": "1", "t": "x:1", "version": "1"}
	for k, v := range want {
		if got := query.Get(k); got != v {
			t.Errorf("build query %s = %q, want %q (query %v)", k, got, v, query)
		}
	}
	if !strings.Contains(query.Get("labels"), `"rigor.test":"1"`) {
		t.Errorf("build labels %q", query.Get("labels"))
	}
}
