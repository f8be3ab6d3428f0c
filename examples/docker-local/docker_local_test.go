// Package dockerlocal_test runs the docker-local campaign and its variants through
// `rigor plan apply` (the static binary the images are built from) against the local
// Docker Engine, and asserts on the journal and the restore receipt.
//
// Without a reachable engine the tests skip, unless RIGOR_REQUIRE_DOCKER=1 (set by
// .ci/run when `docker info` succeeds): then they fail. Everything a test creates is
// named with a per-test prefix and labelled rigor.test=1, rigor.test.run=<prefix>,
// and removed when the test ends. Only 127.0.0.1 and the local socket are used.
package dockerlocal_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/examples/internal/campaigntest"
	"github.com/rigor-bench/rigor/plans"
)

var (
	ctxOnce sync.Once
	ctxDir  string
	ctxErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if ctxDir != "" {
		os.RemoveAll(ctxDir)
	}
	os.Exit(code)
}

// buildContext makes the build context once, as `make docker-local` does (make
// docker-local-context: the static rigor binary and the example's Dockerfiles),
// and returns it and the binary; TestCampaignEndToEnd runs `make docker-local`
// itself, the other tests apply their campaigns with the binary.
func buildContext(t *testing.T) (dir, bin string) {
	t.Helper()
	ctxOnce.Do(func() {
		ctxDir, ctxErr = os.MkdirTemp("", "rigor-docker-ctx-")
		if ctxErr != nil {
			return
		}
		cmd := exec.Command("make", "-s", "-C", filepath.Join("..", ".."), "docker-local-context", "DOCKER_LOCAL_CONTEXT="+ctxDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			ctxErr = fmt.Errorf("make docker-local-context: %v\n%s", err, out)
		}
	})
	if ctxErr != nil {
		t.Fatal(ctxErr)
	}
	return ctxDir, filepath.Join(ctxDir, "rigor")
}

// requireDocker returns a client of the local engine, or skips (fails when
// RIGOR_REQUIRE_DOCKER=1).
func requireDocker(t *testing.T) *client.Client {
	t.Helper()
	api, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err = api.Ping(ctx)
		cancel()
	}
	if err != nil {
		if os.Getenv("RIGOR_REQUIRE_DOCKER") == "1" {
			t.Fatalf("RIGOR_REQUIRE_DOCKER=1 but the Docker Engine is unreachable: %v", err)
		}
		t.Skipf("Docker Engine unreachable (%v); set RIGOR_REQUIRE_DOCKER=1 to make this a failure", err)
	}
	t.Cleanup(func() { api.Close() })
	return api
}

// run is one test's campaign run: its unique prefix, labels and state directory.
type run struct {
	t      *testing.T
	prefix string
	state  string
	bin    string
	ctx    string
	api    *client.Client
}

func newRun(t *testing.T, api *client.Client) *run {
	t.Helper()
	dir, bin := buildContext(t)
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), ""))
	if len(name) > 20 {
		name = name[:20]
	}
	r := &run{t: t, prefix: "rt-" + name + "-" + hex.EncodeToString(b[:]), state: filepath.Join(t.TempDir(), "state"), bin: bin, ctx: dir, api: api}
	if api != nil {
		t.Cleanup(r.cleanup)
	}
	return r
}

func (r *run) labelsVar() string {
	return fmt.Sprintf(`labels={"rigor.test"="1","rigor.test.run"=%q}`, r.prefix)
}

// cleanup removes every container and image that carries this run's label.
func (r *run) cleanup() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := filters.NewArgs(filters.Arg("label", "rigor.test.run="+r.prefix))
	cs, err := r.api.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		r.t.Errorf("cleanup: list containers: %v", err)
	}
	for _, c := range cs {
		if err := r.api.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true}); err != nil {
			r.t.Errorf("cleanup: remove container %s: %v", c.Names, err)
		}
	}
	ims, err := r.api.ImageList(ctx, image.ListOptions{All: true, Filters: f})
	if err != nil {
		r.t.Errorf("cleanup: list images: %v", err)
	}
	for _, im := range ims {
		if _, err := r.api.ImageRemove(ctx, im.ID, image.RemoveOptions{Force: true, PruneChildren: true}); err != nil && !client.IsErrNotFound(err) {
			r.t.Errorf("cleanup: remove image %s: %v", im.ID, err)
		}
	}
}

// apply runs `rigor plan apply` and returns its exit code and combined output.
func (r *run) apply(ctx context.Context, campaign string, vars ...string) (int, string) {
	r.t.Helper()
	abs, _ := filepath.Abs(campaign)
	args := []string{"plan", "apply", abs, "--state", r.state, "--var", "context=" + r.ctx, "--var", "prefix=" + r.prefix, "--var", r.labelsVar()}
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	cmd := exec.CommandContext(ctx, r.bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("rigor plan apply: %v\n%s", err, out)
	}
	return code, string(out)
}

// onceCandidateSends runs do once block.candidate's first attempt has begun
// sending (its requests.jsonl exists) and delay has passed, or gives up when ctx
// ends; the channel carries do's error, or ctx's.
func (r *run) onceCandidateSends(ctx context.Context, delay time.Duration, do func(context.Context) error) <-chan error {
	done := make(chan error, 1)
	go func() {
		started := filepath.Join(r.state, "attempts", "block.candidate", "1", "requests.jsonl")
		for ctx.Err() == nil {
			if _, err := os.Stat(started); err == nil {
				time.Sleep(delay)
				done <- do(ctx)
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		done <- ctx.Err()
	}()
	return done
}

func (r *run) journal() []engine.Record {
	r.t.Helper()
	return campaigntest.Journal(r.t, r.state)
}

// The evidence readers and ports shared with the Kubernetes example's tests.
var (
	end      = campaigntest.End
	outputs  = campaigntest.Outputs
	seq      = campaigntest.Seq
	readJSON = campaigntest.ReadJSON
	freePort = campaigntest.FreePort
)

func TestCampaignEndToEnd(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The README's command, with this test's names, labels, port and context.
	vars := fmt.Sprintf("--var prefix=%s --var '%s' --var port=%d", r.prefix, r.labelsVar(), freePort(t))
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", filepath.Join("..", ".."), "docker-local",
		"DOCKER_LOCAL_CONTEXT="+r.ctx, "DOCKER_LOCAL_STATE="+r.state, "VARS="+vars)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make docker-local: %v\n%s", err, out)
	} else if !strings.Contains(string(out), "campaign docker-local: completed (9 succeeded)") {
		t.Fatalf("make docker-local did not complete the campaign:\n%s", out)
	}
	recs := r.journal()
	for _, addr := range []string{"build.incumbent", "build.candidate", "deploy.incumbent", "identity.incumbent", "block.incumbent",
		"deploy.candidate", "identity.candidate", "block.candidate", "restore.incumbent"} {
		if rec := end(t, recs, addr); rec.Status != engine.StatusSucceeded {
			t.Errorf("%s: %s (%s) %s", addr, rec.Status, rec.Class, rec.Message)
		}
	}
	// The outage opens with the candidate's deploy and closes with the restore.
	begin, closed := seq(recs, engine.KindOutageBegin, "deploy.candidate"), seq(recs, engine.KindOutageEnd, "restore.incumbent")
	if begin < 0 || closed < 0 || closed < begin {
		t.Errorf("outage records: begin seq %d by deploy.candidate, end seq %d by restore.incumbent", begin, closed)
	}
	// The exact incumbent is back: same container ID, same image ID as deployed and built.
	built := outputs(t, end(t, recs, "build.incumbent"))
	deployed := outputs(t, end(t, recs, "deploy.incumbent"))
	restored := outputs(t, end(t, recs, "restore.incumbent"))
	if restored["container_id"] != deployed["container_id"] || restored["image_id"] != built["image_id"] || deployed["image_id"] != built["image_id"] {
		t.Errorf("restored %v/%v, deployed %v/%v, built image %v", restored["container_id"], restored["image_id"], deployed["container_id"], deployed["image_id"], built["image_id"])
	}
	if restored["incarnation"] == deployed["incarnation"] {
		t.Errorf("the restored incumbent was started again, so its incarnation must differ from the deployed one: %v", restored["incarnation"])
	}
	// The candidate is a different image.
	if cand := outputs(t, end(t, recs, "build.candidate")); cand["image_id"] == built["image_id"] {
		t.Errorf("candidate and incumbent images are the same: %v", cand["image_id"])
	}
	// The builds ran before the incumbent was deployed and its identity was unchanged by them... and the
	// identity step saw exactly the deployed incarnation.
	if id := outputs(t, end(t, recs, "identity.incumbent")); id["incarnation"] != deployed["incarnation"] || id["image_id"] != built["image_id"] {
		t.Errorf("identity.incumbent %v / %v, deployed %v / %v", id["incarnation"], id["image_id"], deployed["incarnation"], built["image_id"])
	}
	// The image carries the build step's input hash, and that hash covers the
	// content of every file of the (absolute) context, the Dockerfile among them.
	var inputs string
	var inputFiles map[string]string
	for _, rec := range recs {
		if rec.Kind == engine.KindStepStart && rec.Step == "build.incumbent" {
			inputs = rec.InputsSHA256
			if rec.Inputs != nil {
				inputFiles = rec.Inputs.Files
			}
		}
	}
	dockerfile := filepath.Join(r.ctx, "Dockerfile.incumbent")
	if sum, err := plans.FileSHA256(dockerfile); err != nil || inputFiles[dockerfile] != sum {
		t.Errorf("build.incumbent's hashed inputs %v lack %s at sha256 %s (%v)", inputFiles, dockerfile, sum, err)
	}
	// The build ran under the plan's limits: cpus = 1, memory = "512MiB".
	var br struct {
		NanoCPUs    int64 `json:"nano_cpus"`
		MemoryBytes int64 `json:"memory_bytes"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "build.incumbent").Dir, "build.json"), &br)
	if br.NanoCPUs != 1e9 || br.MemoryBytes != 512<<20 {
		t.Errorf("build.json: nano_cpus %d, memory_bytes %d; want the plan's 1 CPU and 512 MiB", br.NanoCPUs, br.MemoryBytes)
	}
	im, err := api.ImageInspect(ctx, built["image_id"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if got := im.Config.Labels["rigor.inputs_sha256"]; got == "" || got != inputs {
		t.Errorf("image label rigor.inputs_sha256 = %q, build step inputs_sha256 = %q", got, inputs)
	}
	// The manifest was saved before the incumbent was touched: it recorded it running.
	var manifest struct {
		Identity struct {
			ContainerID string `json:"container_id"`
			Status      string `json:"status"`
		} `json:"identity"`
		Inspect json.RawMessage `json:"inspect"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "deploy.candidate").Dir, "restore-manifest.json"), &manifest)
	if manifest.Identity.ContainerID != deployed["container_id"] || manifest.Identity.Status != "running" || len(manifest.Inspect) < 100 {
		t.Errorf("restore manifest: %+v (%d bytes of inspect)", manifest.Identity, len(manifest.Inspect))
	}
	// The receipt.
	var receipt struct {
		Action   string `json:"action"`
		Outcome  string `json:"outcome"`
		Manifest string `json:"manifest"`
		Stopped  []string
		Checks   []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
		NotCompared []struct {
			Name string `json:"name"`
		} `json:"not_compared"`
		WithinBudget bool `json:"within_budget"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "restore.incumbent").Dir, "receipt.json"), &receipt)
	if receipt.Action != "restarted-by-id" || receipt.Outcome != "restored" || !receipt.WithinBudget || len(receipt.Stopped) != 1 ||
		!strings.HasPrefix(receipt.Stopped[0], r.prefix+"-candidate") || receipt.Manifest == "" {
		t.Errorf("receipt: %+v", receipt)
	}
	checked := map[string]bool{}
	for _, c := range receipt.Checks {
		if !c.OK {
			t.Errorf("receipt check %s failed", c.Name)
		}
		checked[c.Name] = true
	}
	// discovery.json is in campaign.frozen: pinned at freeze, compared at restore.
	for _, want := range []string{"container identity", "image identity", "health", "protected file"} {
		if !checked[want] {
			t.Errorf("receipt lacks the %q check: %+v", want, receipt.Checks)
		}
	}
	if len(receipt.NotCompared) > 0 {
		t.Errorf("a pinned protected file reported as not compared: %+v", receipt.NotCompared)
	}
	// And the engine agrees: the incumbent runs, the candidate is stopped, not removed.
	inc, err := api.ContainerInspect(ctx, r.prefix+"-incumbent")
	if err != nil || !inc.State.Running || inc.ID != deployed["container_id"] {
		t.Errorf("incumbent after the campaign: err %v, running %v, ID %s", err, inc.State != nil && inc.State.Running, inc.ID)
	}
	cand, err := api.ContainerInspect(ctx, r.prefix+"-candidate")
	if err != nil || cand.State.Running {
		t.Errorf("candidate after the campaign: err %v, state %+v", err, cand.State)
	}
	r.checkTeardown(ctx)
}

// checkTeardown holds the README's account of what the campaign leaves behind to
// what the engine has: two containers on the default bridge network without
// volumes, the incumbent running and the candidate stopped, and two tagged images,
// all labelled; then `make docker-local-clean` removes every one of them.
func (r *run) checkTeardown(ctx context.Context) {
	t, api := r.t, r.api
	label := filters.NewArgs(filters.Arg("label", "rigor.test.run="+r.prefix))
	cs, err := api.ContainerList(ctx, container.ListOptions{All: true, Filters: label})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range cs {
		info, err := api.ContainerInspect(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var nets []string
		for n := range info.NetworkSettings.Networks {
			nets = append(nets, n)
		}
		got[strings.TrimPrefix(info.Name, "/")] = fmt.Sprintf("%s, networks %v, %d mounts", info.State.Status, nets, len(info.Mounts))
	}
	want := map[string]string{
		r.prefix + "-incumbent": "running, networks [bridge], 0 mounts",
		r.prefix + "-candidate": "exited, networks [bridge], 0 mounts",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("containers the campaign leaves (-README +engine):\n%s", diff)
	}
	ims, err := api.ImageList(ctx, image.ListOptions{Filters: label})
	if err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, im := range ims {
		tags = append(tags, im.RepoTags...)
	}
	slices.Sort(tags)
	if diff := cmp.Diff([]string{r.prefix + "-candidate:latest", r.prefix + "-incumbent:latest"}, tags); diff != "" {
		t.Errorf("images the campaign leaves (-README +engine):\n%s", diff)
	}
	for _, kind := range []string{"network", "volume"} {
		var n int
		if kind == "network" {
			ns, err := api.NetworkList(ctx, network.ListOptions{Filters: label})
			if err != nil {
				t.Fatal(err)
			}
			n = len(ns)
		} else {
			vs, err := api.VolumeList(ctx, volume.ListOptions{Filters: label})
			if err != nil {
				t.Fatal(err)
			}
			n = len(vs.Volumes)
		}
		if n != 0 {
			t.Errorf("the campaign created %d %s(s)", n, kind)
		}
	}
	cmd := exec.CommandContext(ctx, "make", "-s", "-C", filepath.Join("..", ".."), "docker-local-clean", "LABEL=rigor.test.run="+r.prefix)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make docker-local-clean: %v\n%s", err, out)
	}
	if cs, _ := api.ContainerList(ctx, container.ListOptions{All: true, Filters: label}); len(cs) != 0 {
		t.Errorf("make docker-local-clean left %d container(s)", len(cs))
	}
	if ims, _ := api.ImageList(ctx, image.ListOptions{All: true, Filters: label}); len(ims) != 0 {
		t.Errorf("make docker-local-clean left %d image(s)", len(ims))
	}
	for _, tag := range tags {
		if _, err := api.ImageInspect(ctx, tag); !client.IsErrNotFound(err) {
			t.Errorf("image %s after make docker-local-clean: %v", tag, err)
		}
	}
}

func TestKillDuringBlockStopsAndRestores(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Kill the candidate's process a moment after its block started sending.
	killed := r.onceCandidateSends(ctx, 700*time.Millisecond, func(ctx context.Context) error {
		return api.ContainerKill(ctx, r.prefix+"-candidate", "KILL")
	})
	code, out := r.apply(ctx, "campaign.hcl", fmt.Sprintf("port=%d", freePort(t)), "time_scale=0.5", "requests=8")
	if err := <-killed; err != nil {
		t.Fatalf("kill the candidate: %v\n%s", err, out)
	}
	if code == 0 {
		t.Fatalf("apply succeeded although the candidate was killed during its block:\n%s", out)
	}
	recs := r.journal()
	blk := end(t, recs, "block.candidate")
	if blk.Status != engine.StatusFailed || (blk.Class != engine.ClassRestart && blk.Class != engine.ClassIdentity) {
		t.Fatalf("block.candidate: %s (%s) %s; want failed with class restart or identity", blk.Status, blk.Class, blk.Message)
	}
	if !strings.Contains(blk.Message, r.prefix+"-candidate") {
		t.Errorf("the failure must name the container: %s", blk.Message)
	}
	rst := end(t, recs, "restore.incumbent")
	if rst.Status != engine.StatusSucceeded || rst.Seq < blk.Seq {
		t.Fatalf("restore after the kill: %s (%s) %s", rst.Status, rst.Class, rst.Message)
	}
	if o, d := outputs(t, rst), outputs(t, end(t, recs, "deploy.incumbent")); o["container_id"] != d["container_id"] {
		t.Errorf("restored container %v, deployed %v", o["container_id"], d["container_id"])
	}
	if seq(recs, engine.KindOutageEnd, "restore.incumbent") < 0 {
		t.Error("the outage was not closed by the restore")
	}
}

func TestOOMDuringBlock(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code, out := r.apply(ctx, "testdata/oom.hcl", fmt.Sprintf("port=%d", freePort(t)))
	if code == 0 {
		t.Fatalf("apply succeeded although the container must be OOM-killed:\n%s", out)
	}
	recs := r.journal()
	if d := end(t, recs, "deploy.oom"); d.Status != engine.StatusSucceeded {
		t.Fatalf("deploy.oom: %s (%s) %s", d.Status, d.Class, d.Message)
	}
	blk := end(t, recs, "block.oom")
	if blk.Status != engine.StatusFailed || blk.Class != engine.ClassOOM {
		t.Fatalf("block.oom: %s (%s) %s; want failed with class oom", blk.Status, blk.Class, blk.Message)
	}
	c, err := api.ContainerInspect(ctx, r.prefix+"-oom")
	if err != nil || !c.State.OOMKilled {
		t.Errorf("the engine does not report the container OOM-killed: %v %+v", err, c.State)
	}
}

func TestBadInputNamesTheObject(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	squat, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer squat.Close()
	taken := squat.Addr().(*net.TCPAddr).Port
	_, out := r.apply(ctx, "testdata/bad.hcl", fmt.Sprintf("port=%d", freePort(t)), fmt.Sprintf("taken_port=%d", taken),
		fmt.Sprintf("exit_port=%d", freePort(t)), fmt.Sprintf("oom_port=%d", freePort(t)))
	recs := r.journal()
	if d := end(t, recs, "deploy.running"); d.Status != engine.StatusSucceeded {
		t.Fatalf("deploy.running: %s (%s) %s\n%s", d.Status, d.Class, d.Message, out)
	}
	cases := map[string]struct {
		class engine.FailureClass
		want  []string
	}{
		"build.no_context":     {engine.ClassConfig, []string{"build context directory", filepath.Join(r.ctx, "does-not-exist"), "does not exist"}},
		"identity.wrong_image": {engine.ClassIdentity, []string{r.prefix + "-running", "image_id is sha256:", "expected sha256:0000000000"}},
		"identity.missing":     {engine.ClassIdentity, []string{`container "` + r.prefix + `-ghost" not found on docker host unix://`}},
		"deploy.port_taken": {engine.ClassConfig, []string{
			fmt.Sprintf("target squatter cannot serve on 127.0.0.1:%d: port %d is in use by another process. Its ports list takes the port from var.taken_port (", taken, taken),
			fmt.Sprintf("bad.hcl:51): free port %d, or choose a free one with --var taken_port=PORT (or RIGOR_VAR_taken_port=PORT)", taken),
			fmt.Sprintf("port 127.0.0.1:%d is already taken", taken), r.prefix + "-squatter"}},
		// Health is not waited for to its timeout once the container has stopped.
		"deploy.exits":     {engine.ClassHealth, []string{"target exits: container " + r.prefix + "-exits (", ") exited with code 2"}},
		"deploy.oom_early": {engine.ClassOOM, []string{"target oom_early: container " + r.prefix + "-oom-early (", ") was OOM-killed"}},
	}
	for addr, tc := range cases {
		t.Run(addr, func(t *testing.T) {
			rec := end(t, recs, addr)
			if rec.Status != engine.StatusFailed || rec.Class != tc.class {
				t.Fatalf("%s: %s (%s) %s; want failed (%s)", addr, rec.Status, rec.Class, rec.Message, tc.class)
			}
			for _, w := range tc.want {
				if !strings.Contains(rec.Message, w) {
					t.Errorf("%s message %q lacks %q", addr, rec.Message, w)
				}
			}
		})
	}
}

// TestUnreachableHost needs no engine: the host URL points at a closed loopback port.
func TestUnreachableHost(t *testing.T) {
	r := newRun(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const url = "tcp://127.0.0.1:1"
	code, out := r.apply(ctx, "campaign.hcl", "docker_host="+url, fmt.Sprintf("port=%d", freePort(t)))
	if code == 0 {
		t.Fatalf("apply succeeded against %s:\n%s", url, out)
	}
	rec := end(t, r.journal(), "build.incumbent")
	if rec.Status != engine.StatusFailed || !strings.Contains(rec.Message, "docker host "+url+" is unreachable") {
		t.Fatalf("build.incumbent: %s (%s) %q; want a failure naming %s", rec.Status, rec.Class, rec.Message, url)
	}
	if !strings.Contains(out, url) {
		t.Errorf("the apply output does not name %s:\n%s", url, out)
	}
}

// TestContainerChangedBetweenBlocks: the second block is held to what the first one
// saw. A restart between them is a new incarnation; a signal that leaves the same
// incarnation running is still an intervention the engine's events show.
func TestContainerChangedBetweenBlocks(t *testing.T) {
	api := requireDocker(t)
	cases := map[string]struct {
		act   func(ctx context.Context, api *client.Client, name string) error
		class engine.FailureClass
		want  func(before, after string) []string
	}{
		"restarted": {
			act: func(ctx context.Context, api *client.Client, name string) error {
				return api.ContainerRestart(ctx, name, container.StopOptions{})
			},
			class: engine.ClassIdentity,
			want: func(before, after string) []string {
				return []string{"block.a (attempt 1) recorded", "incarnation " + before + " → " + after}
			},
		},
		"signalled": {
			// SIGWINCH: the server ignores it and runs on, same incarnation.
			act: func(ctx context.Context, api *client.Client, name string) error {
				return api.ContainerKill(ctx, name, "WINCH")
			},
			class: engine.ClassIdentity,
			want: func(before, after string) []string {
				return []string{"the engine reported kill on container", "signal 28", "since block.a (attempt 1)"}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRun(t, api)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cname := r.prefix + "-between"
			var before, after string
			acted := make(chan error, 1)
			go func() {
				journal := filepath.Join(r.state, engine.JournalFile)
				for ctx.Err() == nil {
					if b, err := os.ReadFile(journal); err == nil && strings.Contains(string(b), `"step":"exec.pause"`) {
						c, err := api.ContainerInspect(ctx, cname)
						if err == nil {
							before = c.ID + "@" + c.State.StartedAt
							err = tc.act(ctx, api, cname)
						}
						if c, ierr := api.ContainerInspect(ctx, cname); ierr == nil {
							after = c.ID + "@" + c.State.StartedAt
						}
						acted <- err
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
				acted <- ctx.Err()
			}()
			code, out := r.apply(ctx, "testdata/between.hcl", fmt.Sprintf("port=%d", freePort(t)))
			if err := <-acted; err != nil {
				t.Fatalf("act on the container: %v\n%s", err, out)
			}
			if code == 0 {
				t.Fatalf("apply succeeded although the container was %s between the blocks:\n%s", name, out)
			}
			recs := r.journal()
			if a := end(t, recs, "block.a"); a.Status != engine.StatusSucceeded || outputs(t, a)["incarnation"] != before {
				t.Fatalf("block.a: %s %s, incarnation %v (container was %s)", a.Status, a.Message, outputs(t, a)["incarnation"], before)
			}
			b := end(t, recs, "block.b")
			if b.Status != engine.StatusFailed || b.Class != tc.class {
				t.Fatalf("block.b: %s (%s) %s; want failed (%s)", b.Status, b.Class, b.Message, tc.class)
			}
			for _, w := range tc.want(before, after) {
				if !strings.Contains(b.Message, w) {
					t.Errorf("block.b message lacks %q: %s", w, b.Message)
				}
			}
			if _, err := os.Stat(filepath.Join(r.state, b.Dir, "requests.jsonl")); err == nil {
				t.Error("block.b sent requests although its identity gate failed")
			}
		})
	}
}

// TestRestoreRecreatesARemovedIncumbent: the displaced incumbent is removed while
// the candidate serves (someone cleaned up); restore recreates it under its name
// from the restore manifest's inspect (receipt action recreated-from-manifest: the
// image ID and the configuration the deploy recorded), and the outage closes.
func TestRestoreRecreatesARemovedIncumbent(t *testing.T) {
	api := requireDocker(t)
	r := newRun(t, api)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	watch, stopWatching := context.WithCancel(ctx)
	removed := r.onceCandidateSends(watch, 0, func(ctx context.Context) error {
		return api.ContainerRemove(ctx, r.prefix+"-incumbent", container.RemoveOptions{Force: true})
	})
	code, out := r.apply(ctx, "campaign.hcl", fmt.Sprintf("port=%d", freePort(t)), "time_scale=0.5", "requests=8")
	stopWatching() // a watcher still waiting for the candidate's block gives up now
	if err := <-removed; err != nil {
		t.Fatalf("remove the incumbent: %v\n%s", err, out)
	}
	recs := r.journal()
	rst := end(t, recs, "restore.incumbent")
	if code != 0 || rst.Status != engine.StatusSucceeded {
		t.Fatalf("exit %d, restore %s (%s) %s:\n%s", code, rst.Status, rst.Class, rst.Message, out)
	}
	var receipt struct {
		Action, Outcome string
	}
	readJSON(t, filepath.Join(r.state, rst.Dir, "receipt.json"), &receipt)
	if receipt.Action != "recreated-from-manifest" || receipt.Outcome != "restored" {
		t.Errorf("receipt: action %q, outcome %q; want recreated-from-manifest, restored", receipt.Action, receipt.Outcome)
	}
	deployed, restored := outputs(t, end(t, recs, "deploy.incumbent")), outputs(t, rst)
	if restored["container_id"] == deployed["container_id"] || restored["image_id"] != deployed["image_id"] {
		t.Errorf("restored container %v image %v; deployed %v image %v: want a new container of the same image", restored["container_id"], restored["image_id"], deployed["container_id"], deployed["image_id"])
	}
	var manifest struct {
		Inspect struct {
			Config struct {
				Cmd []string `json:"Cmd"`
			} `json:"Config"`
			HostConfig struct {
				Memory int64 `json:"Memory"`
			} `json:"HostConfig"`
		} `json:"inspect"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "deploy.candidate").Dir, "restore-manifest.json"), &manifest)
	now, err := api.ContainerInspect(ctx, r.prefix+"-incumbent")
	if err != nil {
		t.Fatalf("inspect the recreated incumbent: %v", err)
	}
	if !now.State.Running || now.ID != restored["container_id"] {
		t.Fatalf("the recreated incumbent %s: %+v", now.ID, now.State)
	}
	if !slices.Equal(now.Config.Cmd, manifest.Inspect.Config.Cmd) || now.HostConfig.Memory != manifest.Inspect.HostConfig.Memory || now.HostConfig.Memory != 256<<20 {
		t.Errorf("recreated with cmd %v, memory %d; the manifest recorded %v, %d", now.Config.Cmd, now.HostConfig.Memory, manifest.Inspect.Config.Cmd, manifest.Inspect.HostConfig.Memory)
	}
	if seq(recs, engine.KindOutageEnd, "restore.incumbent") < 0 {
		t.Error("the outage was not closed by the restore")
	}
}
