// Package kubernetes_test applies the kubernetes campaign and its variants through
// `rigor plan apply` (the static binary the images are built from) on the real test
// cluster that .ci/kube/cluster.sh starts, and asserts on the journal, the restore
// receipt and the cluster itself.
//
// Without RIGOR_KUBECONFIG the tests that need the cluster skip, unless
// RIGOR_REQUIRE_KUBE=1 (set by .ci/run where the cluster starts): then they fail.
// Each test works in a namespace of its own (kubetest.Require), deleted when it
// ends, and on a free loopback port; only 127.0.0.1 is used (hostNetwork pods).
package kubernetes_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/examples/kubernetes/kubetest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	incumbentImage = "rigor-kube-example/sim:incumbent"
	candidateImage = "rigor-kube-example/sim:candidate"
)

var (
	binOnce, imgOnce sync.Once
	binDir, bin      string
	binErr, imgErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if imgErr == nil && binDir != "" {
		_ = exec.Command("docker", "rmi", "-f", incumbentImage, candidateImage).Run()
	}
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// rigorBinary builds the static rigor binary once: the images' only file, and the
// command the tests apply campaigns with.
func rigorBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		if binDir, binErr = os.MkdirTemp("", "rigor-kube-ctx-"); binErr != nil {
			return
		}
		bin = filepath.Join(binDir, "rigor")
		cmd := exec.Command("go", "build", "-o", bin, "../../cmd/rigor")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build rigor: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return bin
}

// images builds the two images FROM scratch and imports them into the cluster's
// containerd, once.
func images(t *testing.T) {
	t.Helper()
	rigorBinary(t)
	imgOnce.Do(func() {
		for tag, file := range map[string]string{incumbentImage: "Dockerfile.incumbent", candidateImage: "Dockerfile.candidate"} {
			if out, err := exec.Command("docker", "build", "-q", "-t", tag, "-f", file, binDir).CombinedOutput(); err != nil {
				imgErr = fmt.Errorf("docker build %s: %v\n%s", tag, err, out)
				return
			}
		}
	})
	if imgErr != nil {
		t.Fatal(imgErr)
	}
	kubetest.LoadImages(t, incumbentImage, candidateImage)
}

type run struct {
	t     *testing.T
	kc    *kubetest.Cluster
	state string
	port  int
}

// newRun starts a test on the cluster: images loaded, the two Deployments of
// deployments.yaml applied in the test's namespace on a free port, simulator time
// scaled by timeScale.
func newRun(t *testing.T, timeScale string, deployments bool) *run {
	t.Helper()
	kc := kubetest.Require(t)
	images(t)
	r := &run{t: t, kc: kc, state: filepath.Join(t.TempDir(), "state"), port: freePort(t)}
	if deployments {
		kc.ApplyDeployments(t, "deployments.yaml", "19210", strconv.Itoa(r.port), `"0.02"`, strconv.Quote(timeScale))
	}
	return r
}

func (r *run) apply(ctx context.Context, campaign string, vars ...string) (int, string) {
	r.t.Helper()
	return apply(r.t, ctx, campaign, r.state, append([]string{"kubeconfig=" + r.kc.Kubeconfig, "namespace=" + r.kc.Namespace, fmt.Sprintf("port=%d", r.port)}, vars...)...)
}

func apply(t *testing.T, ctx context.Context, campaign, state string, vars ...string) (int, string) {
	t.Helper()
	args := []string{"plan", "apply", campaign, "--state", state}
	for _, v := range vars {
		args = append(args, "--var", v)
	}
	out, err := exec.CommandContext(ctx, rigorBinary(t), args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("rigor plan apply: %v\n%s", err, out)
	}
	return 0, string(out)
}

func journal(t *testing.T, state string) []engine.Record {
	t.Helper()
	recs, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	return recs
}

func end(t *testing.T, recs []engine.Record, addr string) engine.Record {
	t.Helper()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == engine.KindStepEnd && recs[i].Step == addr {
			return recs[i]
		}
	}
	t.Fatalf("no step_end record for %s", addr)
	return engine.Record{}
}

func outputs(t *testing.T, rec engine.Record) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Outputs, &m); err != nil {
		t.Fatalf("outputs of %s: %v (%s)", rec.Step, err, rec.Outputs)
	}
	return m
}

func seq(recs []engine.Record, kind, step string) int {
	for _, r := range recs {
		if r.Kind == kind && (step == "" || r.Step == step) {
			return r.Seq
		}
	}
	return -1
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestCampaignEndToEnd applies the example as it is: identity, the candidate's
// deploy, the ABBA matrix and the exact restore, all on the cluster.
func TestCampaignEndToEnd(t *testing.T) {
	r := newRun(t, "0.02", true)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	code, out := r.apply(ctx, "campaign.hcl")
	if code != 0 {
		t.Fatalf("apply failed (exit %d):\n%s", code, out)
	}
	recs := journal(t, r.state)
	blocks := 0
	for _, rec := range recs {
		if rec.Kind == engine.KindStepEnd {
			if rec.Status != engine.StatusSucceeded {
				t.Errorf("%s: %s (%s) %s", rec.Step, rec.Status, rec.Class, rec.Message)
			}
			if strings.HasPrefix(rec.Step, "block.primary[") {
				blocks++
			}
		}
	}
	if blocks != 3 {
		t.Errorf("%d matrix blocks ended; want 3 (incumbent, candidate, incumbent again)", blocks)
	}
	begin, closed := seq(recs, engine.KindOutageBegin, "deploy.candidate"), seq(recs, engine.KindOutageEnd, "restore.incumbent")
	if begin < 0 || closed < begin {
		t.Errorf("outage records: begin seq %d by deploy.candidate, end seq %d by restore.incumbent", begin, closed)
	}
	deployed := outputs(t, end(t, recs, "deploy.incumbent"))
	restored := outputs(t, end(t, recs, "restore.incumbent"))
	candidate := outputs(t, end(t, recs, "deploy.candidate"))
	digest, _ := deployed["image_id"].(string)
	if !strings.HasPrefix(digest, "sha256:") || restored["image_id"] != digest {
		t.Errorf("restored image %v, deployed %v: the exact digest must come back", restored["image_id"], digest)
	}
	if candidate["image_id"] == digest {
		t.Errorf("candidate and incumbent run the same image %v", digest)
	}
	if id := outputs(t, end(t, recs, "identity.incumbent")); id["incarnation"] != deployed["incarnation"] || id["status"] != "running" {
		t.Errorf("identity.incumbent %v (%v), deployed %v", id["incarnation"], id["status"], deployed["incarnation"])
	}
	// The incarnation is the set of (pod UID, restart count); the restore rolled new
	// pods out with the image pinned to its digest.
	if inc, _ := restored["incarnation"].(string); inc == deployed["incarnation"] || !strings.HasSuffix(inc, "/0") {
		t.Errorf("restored incarnation %q, deployed %q", inc, deployed["incarnation"])
	}
	// The manifest was saved before the incumbent was touched.
	var saved struct {
		Kind     string `json:"kind"`
		Identity struct {
			Name        string `json:"name"`
			ImageID     string `json:"image_id"`
			Incarnation string `json:"incarnation"`
			Status      string `json:"status"`
		} `json:"identity"`
		Pods []struct {
			Node string `json:"node"`
		} `json:"pods"`
		Object json.RawMessage `json:"object"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "deploy.candidate").Dir, "restore-manifest.json"), &saved)
	if saved.Kind != "kubernetes" || saved.Identity.Name != "sim-incumbent" || saved.Identity.ImageID != digest ||
		saved.Identity.Status != "running" || len(saved.Pods) != 1 || saved.Pods[0].Node != "rigor-node" || !strings.Contains(string(saved.Object), `"kind":"Deployment"`) {
		t.Errorf("restore manifest: %+v, %d pods, %d bytes of object", saved.Identity, len(saved.Pods), len(saved.Object))
	}
	var receipt struct {
		Runtime string   `json:"runtime"`
		Action  string   `json:"action"`
		Outcome string   `json:"outcome"`
		Stopped []string `json:"stopped"`
		Checks  []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
		WithinBudget bool `json:"within_budget"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "restore.incumbent").Dir, "receipt.json"), &receipt)
	// deploy.incumbent_again already took the candidate out of service for the last
	// arm, so restore has nothing to stop.
	if receipt.Runtime != "kubernetes" || receipt.Action != "reapplied-from-manifest" || receipt.Outcome != "restored" || !receipt.WithinBudget ||
		len(receipt.Stopped) != 0 {
		t.Errorf("receipt: %+v", receipt)
	}
	checked := map[string]bool{}
	for _, c := range receipt.Checks {
		if !c.OK {
			t.Errorf("receipt check %s failed", c.Name)
		}
		checked[c.Name] = true
	}
	for _, want := range []string{"restore manifest", "image identity", "health", "protected file"} {
		if !checked[want] {
			t.Errorf("receipt lacks the %q check: %+v", want, receipt.Checks)
		}
	}
	// And the cluster agrees: the incumbent runs its exact digest, pinned in its
	// template; the candidate is at 0 replicas, not deleted.
	d, err := r.kc.API.AppsV1().Deployments(r.kc.Namespace).Get(ctx, "sim-incumbent", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != digest {
		t.Errorf("incumbent after the campaign: %v, template image %q; want %s", err, d.Spec.Template.Spec.Containers[0].Image, digest)
	}
	for _, p := range r.kc.Pods(t, "sim-incumbent") {
		if len(p.Status.ContainerStatuses) != 1 || !strings.HasSuffix(p.Status.ContainerStatuses[0].ImageID, digest) {
			t.Errorf("incumbent pod %s runs %+v; want %s", p.Name, p.Status.ContainerStatuses, digest)
		}
	}
	c, err := r.kc.API.AppsV1().Deployments(r.kc.Namespace).Get(ctx, "sim-candidate", metav1.GetOptions{})
	if err != nil || c.Spec.Replicas == nil || *c.Spec.Replicas != 0 {
		t.Errorf("candidate after the campaign: %v, replicas %v; want 0", err, c.Spec.Replicas)
	}
}

// TestPodKilledDuringBlock deletes the candidate's pod while its block sends: the
// ReplicaSet replaces it, so the block ends with a new incarnation (restart), names
// the Deployment, and the incumbent is restored.
func TestPodKilledDuringBlock(t *testing.T) {
	r := newRun(t, "0.3", true)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	killed := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if candidateSending(r.state) {
				time.Sleep(500 * time.Millisecond)
				zero := int64(0)
				killed <- r.kc.API.CoreV1().Pods(r.kc.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero},
					metav1.ListOptions{LabelSelector: "app=sim-candidate"})
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		killed <- ctx.Err()
	}()
	code, out := r.apply(ctx, "campaign.hcl", "requests=16")
	if err := <-killed; err != nil {
		t.Fatalf("delete the candidate's pod: %v\n%s", err, out)
	}
	if code == 0 {
		t.Fatalf("apply succeeded although the candidate's pod was killed during its block:\n%s", out)
	}
	recs := journal(t, r.state)
	blk := end(t, recs, `block.primary["candidate/c2/r1"]`)
	if blk.Status != engine.StatusFailed || (blk.Class != engine.ClassRestart && blk.Class != engine.ClassIdentity) {
		t.Fatalf("candidate block: %s (%s) %s; want failed with class restart or identity", blk.Status, blk.Class, blk.Message)
	}
	if !strings.Contains(blk.Message, "sim-candidate") {
		t.Errorf("the failure must name the deployment: %s", blk.Message)
	}
	rst := end(t, recs, "restore.incumbent")
	if rst.Status != engine.StatusSucceeded || rst.Seq < blk.Seq {
		t.Fatalf("restore after the kill: %s (%s) %s", rst.Status, rst.Class, rst.Message)
	}
	if o, d := outputs(t, rst), outputs(t, end(t, recs, "deploy.incumbent")); o["image_id"] != d["image_id"] {
		t.Errorf("restored image %v, deployed %v", o["image_id"], d["image_id"])
	}
	if seq(recs, engine.KindOutageEnd, "restore.incumbent") < 0 {
		t.Error("the outage was not closed by the restore")
	}
	var receipt struct {
		Stopped []string `json:"stopped"`
	}
	readJSON(t, filepath.Join(r.state, rst.Dir, "receipt.json"), &receipt)
	if len(receipt.Stopped) != 1 || receipt.Stopped[0] != "deployment sim-candidate" {
		t.Errorf("restore stopped %v; want the candidate's deployment", receipt.Stopped)
	}
}

// candidateSending reports whether the candidate's block has started sending.
func candidateSending(state string) bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(state, "attempts"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "requests.jsonl" && strings.Contains(p, "candidate") {
			if fi, err := d.Info(); err == nil && fi.Size() > 0 {
				found = true
			}
		}
		return nil
	})
	return found
}

// TestBadInputNamesTheObject: the namespace has no Deployments, so the first deploy
// fails with a configuration error naming the Deployment, its namespace and the
// server, and restore says no deploy saved it.
func TestBadInputNamesTheObject(t *testing.T) {
	r := newRun(t, "0.02", false)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code, out := r.apply(ctx, "campaign.hcl")
	if code == 0 {
		t.Fatalf("apply succeeded without the deployments:\n%s", out)
	}
	recs := journal(t, r.state)
	d := end(t, recs, "deploy.incumbent")
	want := fmt.Sprintf("target incumbent: deployment %s/sim-incumbent not found on https://127.0.0.1:", r.kc.Namespace)
	if d.Status != engine.StatusFailed || d.Class != engine.ClassConfig || !strings.Contains(d.Message, want) {
		t.Fatalf("deploy.incumbent: %s (%s) %q; want a config failure containing %q", d.Status, d.Class, d.Message, want)
	}
	rst := end(t, recs, "restore.incumbent")
	if rst.Status != engine.StatusFailed || !strings.Contains(rst.Message, "deployment sim-incumbent is not in namespace "+r.kc.Namespace) {
		t.Errorf("restore.incumbent: %s (%s) %q", rst.Status, rst.Class, rst.Message)
	}
}

// TestUnreachableAPIServer needs no cluster: the kubeconfig names a closed loopback
// port, and the failure names that URL.
func TestUnreachableAPIServer(t *testing.T) {
	const url = "https://127.0.0.1:19298"
	rigorBinary(t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	state := filepath.Join(t.TempDir(), "state")
	code, out := apply(t, ctx, "campaign.hcl", state, "kubeconfig="+kubetest.Kubeconfig(t, url), "port=19297")
	if code == 0 {
		t.Fatalf("apply succeeded against %s:\n%s", url, out)
	}
	rec := end(t, journal(t, state), "deploy.incumbent")
	if rec.Status != engine.StatusFailed || !strings.Contains(rec.Message, "kubernetes API server unreachable: "+url) {
		t.Fatalf("deploy.incumbent: %s (%s) %q; want a failure naming %s", rec.Status, rec.Class, rec.Message, url)
	}
	if !strings.Contains(out, url) {
		t.Errorf("the apply output does not name %s:\n%s", url, out)
	}
}
