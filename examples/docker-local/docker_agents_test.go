package dockerlocal_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
)

// TestAgentsAsContainers: three `rigor agent` containers, built FROM scratch from
// the static binary (Dockerfile.agent), send a block of a campaign; the block's
// requests.jsonl is one client's and result.json names each containerised agent.
func TestAgentsAsContainers(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	labels := map[string]string{"rigor.test": "1", "rigor.test.run": r.prefix}

	// The image, from the build context `make docker-local-context` makes.
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, name := range []string{"rigor", "Dockerfile.agent"} {
		b, err := os.ReadFile(filepath.Join(r.ctx, name))
		if err != nil {
			t.Fatal(err)
		}
		tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(b))})
		tw.Write(b)
	}
	tw.Close()
	tag := r.prefix + "-agent:test"
	resp, err := api.ImageBuild(ctx, &tb, build.ImageBuildOptions{Tags: []string{tag}, Dockerfile: "Dockerfile.agent", Labels: labels, Remove: true, Version: build.BuilderV1})
	if err != nil {
		t.Fatal(err)
	}
	msgs, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if bytes.Contains(msgs, []byte(`"error"`)) {
		t.Fatalf("build Dockerfile.agent: %s", msgs)
	}

	ports := []int{19321, 19322, 19323}
	var ids []string
	for k, port := range ports {
		c, err := api.ContainerCreate(ctx,
			&container.Config{Image: tag, Cmd: []string{"--listen", fmt.Sprintf("127.0.0.1:%d", port)}, Labels: labels},
			&container.HostConfig{NetworkMode: "host"}, nil, nil, fmt.Sprintf("%s-agent%d", r.prefix, k))
		if err != nil {
			t.Fatal(err)
		}
		if err := api.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, c.ID)
	}
	for _, port := range ports {
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		for deadline := time.Now().Add(20 * time.Second); ; {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent container on %s not listening: %v", addr, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	abs, _ := filepath.Abs(filepath.Join("testdata", "agents.hcl"))
	out, err := exec.CommandContext(ctx, r.bin, "plan", "apply", abs, "--state", r.state).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "campaign docker-agents: completed (2 succeeded)") {
		t.Fatalf("apply: %v\n%s", err, out)
	}
	dir := filepath.Join(r.state, "attempts", "block.b", "1")
	lines, _ := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if n := bytes.Count(lines, []byte("\n")); n != 30 {
		t.Fatalf("requests.jsonl has %d records, want 30", n)
	}
	var res struct {
		Agents struct {
			Agents []struct {
				Agent            string
				Planned, Records int
				ClockBoundMS     float64 `json:"clock_bound_ms"`
			}
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Agents.Agents) != 3 {
		t.Fatalf("result.json agents: %s", b)
	}
	for k, a := range res.Agents.Agents {
		if a.Agent != fmt.Sprintf("tcp://127.0.0.1:%d", ports[k]) || a.Planned != 10 || a.Records != 10 || a.ClockBoundMS <= 0 {
			t.Fatalf("agent %d: %+v", k, a)
		}
	}
	// Each container ran its slice.
	for k, id := range ids {
		logs, err := api.ContainerLogs(ctx, id, container.LogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(logs)
		logs.Close()
		if want := fmt.Sprintf("slice %d of 3 of docker-agents/block.b", k+1); !bytes.Contains(text, []byte(want)) {
			t.Fatalf("agent container %d logs lack %q:\n%s", k, want, text)
		}
	}
}
