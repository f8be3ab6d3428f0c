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
	"github.com/rigor-bench/rigor/examples/internal/campaigntest"
	"github.com/rigor-bench/rigor/examples/kubernetes/kubetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	incumbentImage = "rigor-kube-example/sim:incumbent"
	candidateImage = "rigor-kube-example/sim:candidate"
	agentImage     = "rigor-kube-example/rigor:agent"
	agentCount     = 3 // agents.yaml's completions
)

var (
	binOnce, imgOnce sync.Once
	binDir, bin      string
	binErr, imgErr   error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if imgErr == nil && binDir != "" {
		_ = exec.Command("docker", "rmi", "-f", incumbentImage, candidateImage, agentImage).Run()
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

// images builds the three images FROM scratch and imports them into the cluster's
// containerd, once.
func images(t *testing.T) {
	t.Helper()
	rigorBinary(t)
	imgOnce.Do(func() {
		for tag, file := range map[string]string{incumbentImage: "Dockerfile.incumbent", candidateImage: "Dockerfile.candidate", agentImage: "Dockerfile.agent"} {
			if out, err := exec.Command("docker", "build", "-q", "-t", tag, "-f", file, binDir).CombinedOutput(); err != nil {
				imgErr = fmt.Errorf("docker build %s: %v\n%s", tag, err, out)
				return
			}
		}
	})
	if imgErr != nil {
		t.Fatal(imgErr)
	}
	kubetest.LoadImages(t, incumbentImage, candidateImage, agentImage)
}

type run struct {
	t      *testing.T
	kc     *kubetest.Cluster
	state  string
	port   int
	agents []string // the agent Job's addresses, in completion-index order
}

// newRun starts a test on the cluster: images loaded, the two Deployments of
// manifest (deployments.yaml or a variant; none when "") and the agents' Indexed Job
// of agents.yaml applied in the test's namespace on free ports, simulator time
// scaled by timeScale.
func newRun(t *testing.T, timeScale, manifest string) *run {
	t.Helper()
	kc := kubetest.Require(t)
	images(t)
	r := &run{t: t, kc: kc, state: filepath.Join(t.TempDir(), "state"), port: freePort(t)}
	if manifest != "" {
		kc.ApplyDeployments(t, manifest, "19210", strconv.Itoa(r.port), `"0.02"`, strconv.Quote(timeScale))
	}
	base := freePorts(t, agentCount)
	kc.ApplyJobs(t, "agents.yaml", "19220", strconv.Itoa(base))
	for k := range agentCount {
		r.agents = append(r.agents, fmt.Sprintf("tcp://127.0.0.1:%d", base+k))
	}
	waitListening(t, r.agents)
	return r
}

// exitHeld is plan apply's exit code for a held campaign (README: exit codes).
const exitHeld = 3

func (r *run) apply(ctx context.Context, campaign string, vars ...string) (int, string) {
	r.t.Helper()
	quoted := make([]string, len(r.agents))
	for i, a := range r.agents {
		quoted[i] = strconv.Quote(a)
	}
	return apply(r.t, ctx, campaign, r.state, append([]string{"kubeconfig=" + r.kc.Kubeconfig, "namespace=" + r.kc.Namespace,
		fmt.Sprintf("port=%d", r.port), "agents=[" + strings.Join(quoted, ", ") + "]"}, vars...)...)
}

// waitListening waits until every agent pod accepts connections (a minute at most:
// the Job's pods are scheduled, their image is local).
func waitListening(t *testing.T, agents []string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for _, a := range agents {
		for {
			c, err := net.DialTimeout("tcp", strings.TrimPrefix(a, "tcp://"), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("agent %s of the Indexed Job not listening after a minute: %v", a, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
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

// The evidence readers and ports shared with the Docker example's tests.
var (
	journal   = campaigntest.Journal
	end       = campaigntest.End
	outputs   = campaigntest.Outputs
	seq       = campaigntest.Seq
	readJSON  = campaigntest.ReadJSON
	freePort  = campaigntest.FreePort
	freePorts = campaigntest.FreePorts
)

// TestCampaignEndToEnd applies the example as it is: identity, the candidate's
// deploy, the ABBA matrix and the exact restore, all on the cluster.
func TestCampaignEndToEnd(t *testing.T) {
	r := newRun(t, "0.02", "deployments.yaml")
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
				checkAgents(t, r, filepath.Join(r.state, rec.Dir))
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
	var object struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(saved.Object, &object)
	if saved.Kind != "kubernetes" || saved.Identity.Name != "sim-incumbent" || saved.Identity.ImageID != digest ||
		saved.Identity.Status != "running" || len(saved.Pods) != 1 || saved.Pods[0].Node != "rigor-node" ||
		object.Kind != "Deployment" || object.Metadata.Name != "sim-incumbent" {
		t.Errorf("restore manifest: %+v, %d pods, object %+v", saved.Identity, len(saved.Pods), object)
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
	// And the cluster agrees: the incumbent's pods run its exact digest under the
	// reference it was deployed with (an imported image has no registry digest to
	// pin); the candidate is at 0 replicas, not deleted.
	d, err := r.kc.API.AppsV1().Deployments(r.kc.Namespace).Get(ctx, "sim-incumbent", metav1.GetOptions{})
	if err != nil || d.Spec.Template.Spec.Containers[0].Image != incumbentImage {
		t.Errorf("incumbent after the campaign: %v, template image %q; want %s", err, d.Spec.Template.Spec.Containers[0].Image, incumbentImage)
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
	// The evidence verifies and reports as any campaign's.
	if out, err := exec.CommandContext(ctx, rigorBinary(t), "verify", "--state", r.state).CombinedOutput(); err != nil || !strings.Contains(string(out), "verified: "+r.state) {
		t.Errorf("rigor verify: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "report")
	if out, err := exec.CommandContext(ctx, rigorBinary(t), "report", "--state", r.state, "--out", dir).CombinedOutput(); err != nil {
		t.Fatalf("rigor report: %v\n%s", err, out)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"incumbent_before", "candidate", "incumbent_after", "3 agents"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md does not mention %q", want)
		}
	}
}

// checkAgents holds a block to the agents' Indexed Job: pod k (at the k-th address)
// sent slice k, one connection each, and the merged requests.jsonl holds every
// request once.
func checkAgents(t *testing.T, r *run, dir string) {
	t.Helper()
	var res struct {
		Requests int `json:"requests"`
		Agents   struct {
			Agents []struct {
				Agent       string `json:"agent"`
				Slice       int    `json:"slice"`
				Connections int    `json:"connections"`
				Records     int    `json:"records"`
			} `json:"agents"`
		} `json:"agents"`
	}
	readJSON(t, filepath.Join(dir, "result.json"), &res)
	got := res.Agents.Agents
	if len(got) != agentCount {
		t.Fatalf("%s: %d agents in result.json, want the Job's %d", dir, len(got), agentCount)
	}
	sum := 0
	for k, a := range got {
		if a.Agent != r.agents[k] || a.Slice != k || a.Connections != 1 || a.Records == 0 {
			t.Errorf("%s: agent %d %+v; want %s, slice %d, 1 connection, some records", dir, k, a, r.agents[k], k)
		}
		sum += a.Records
	}
	b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(string(b), "\n"); lines != sum || lines != 9 {
		t.Errorf("%s: requests.jsonl has %d records, the agents sent %d; want the cell's 9", dir, lines, sum)
	}
}

// TestPodKilledDuringBlock deletes the candidate's pod while its block sends: the
// ReplicaSet replaces it, so the block ends with a new incarnation (restart), names
// the Deployment, stops the candidate's arm, and the incumbent is restored.
func TestPodKilledDuringBlock(t *testing.T) {
	r := newRun(t, "0.3", "deployments.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	watch, stop := context.WithCancel(ctx) // ends the watch when the apply ends first
	killed := when(watch, func() bool { return sending(r.state, "candidate") }, func() error {
		time.Sleep(500 * time.Millisecond)
		return r.deletePods(ctx, "app=sim-candidate")
	})
	code, out := r.apply(ctx, "campaign.hcl", "requests=16")
	stop()
	if err := <-killed; err != nil {
		t.Fatalf("delete the candidate's pod: %v\n%s", err, out)
	}
	// A restart stops the candidate's arm, not the campaign: the incumbent's arms run
	// and the campaign completes, its output naming the stopped arm.
	if code != 0 || !strings.Contains(out, "arm primary/candidate stopped") {
		t.Fatalf("apply exited %d; want 0 with the candidate's arm stopped:\n%s", code, out)
	}
	recs := journal(t, r.state)
	blk := end(t, recs, `block.primary["candidate/c3/r1"]`)
	if blk.Status != engine.StatusFailed || (blk.Class != engine.ClassRestart && blk.Class != engine.ClassIdentity) {
		t.Fatalf("candidate block: %s (%s) %s; want failed with class restart or identity", blk.Status, blk.Class, blk.Message)
	}
	if !strings.Contains(blk.Message, "sim-candidate") {
		t.Errorf("the failure must name the deployment: %s", blk.Message)
	}
	// The pod's statuses are gone with it; the cluster's events say why it went.
	if !strings.Contains(blk.Message, "the cluster reported Killing on pod sim-candidate-") {
		t.Errorf("the failure must say what the cluster reported about the deleted pod: %s", blk.Message)
	}
	rst := restoredAfter(t, recs, blk)
	if o, d := outputs(t, rst), outputs(t, end(t, recs, "deploy.incumbent")); o["image_id"] != d["image_id"] {
		t.Errorf("restored image %v, deployed %v", o["image_id"], d["image_id"])
	}
	// The incumbent's last arm ran after the stopped one, on the incumbent again.
	if again := end(t, recs, "deploy.incumbent_again"); again.Status != engine.StatusSucceeded || again.Seq < blk.Seq {
		t.Errorf("deploy.incumbent_again after the stopped arm: %s (%s) %s", again.Status, again.Class, again.Message)
	}
	if after := end(t, recs, `block.primary["incumbent_after/c3/r1"]`); after.Status != engine.StatusSucceeded {
		t.Errorf("the incumbent's last block: %s (%s) %s", after.Status, after.Class, after.Message)
	}
	c, err := r.kc.API.AppsV1().Deployments(r.kc.Namespace).Get(ctx, "sim-candidate", metav1.GetOptions{})
	if err != nil || c.Spec.Replicas == nil || *c.Spec.Replicas != 0 {
		t.Errorf("candidate after the campaign: %v, replicas %v; want 0", err, c.Spec.Replicas)
	}
}

// TestOOMDuringBlock: the candidate's container passes its memory limit during its
// block; the kubelet kills it (OOMKilled), the block fails with the stop-class oom
// naming the Deployment, its arm stops, and the incumbent is restored.
func TestOOMDuringBlock(t *testing.T) {
	r := newRun(t, "0.5", "testdata/oom.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	code, out := r.apply(ctx, "campaign.hcl", "requests=96")
	if code != 0 || !strings.Contains(out, "arm primary/candidate stopped") {
		t.Fatalf("apply exited %d; want 0 with the candidate's arm stopped:\n%s", code, out)
	}
	recs := journal(t, r.state)
	if d := end(t, recs, "deploy.candidate"); d.Status != engine.StatusSucceeded {
		t.Fatalf("deploy.candidate: %s (%s) %s; the OOM must come during the block", d.Status, d.Class, d.Message)
	}
	blk := end(t, recs, `block.primary["candidate/c3/r1"]`)
	if blk.Status != engine.StatusFailed || blk.Class != engine.ClassOOM || !strings.Contains(blk.Message, "sim-candidate") {
		t.Fatalf("candidate block: %s (%s) %s; want failed with class oom naming sim-candidate", blk.Status, blk.Class, blk.Message)
	}
	b, err := os.ReadFile(filepath.Join(r.state, blk.Dir, "requests.jsonl"))
	if err != nil || strings.Count(string(b), "\n") != 96 {
		t.Errorf("the OOM-killed block keeps one record per request: %v, %d records", err, strings.Count(string(b), "\n"))
	}
	restoredAfter(t, recs, blk)
}

// TestStatefulSets runs the lifecycle on StatefulSets (testdata/statefulset.hcl):
// deploying the candidate saves the incumbent's StatefulSet before scaling it to 0,
// the candidate's StatefulSet serves the block, and restore stops the candidate and
// applies the saved StatefulSet again with its exact image ID.
func TestStatefulSets(t *testing.T) {
	r := newRun(t, "0.02", "")
	r.kc.ApplyStatefulSets(t, "testdata/statefulset.yaml", "19210", strconv.Itoa(r.port))
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	code, out := r.apply(ctx, "testdata/statefulset.hcl")
	if code != 0 {
		t.Fatalf("apply failed (exit %d):\n%s", code, out)
	}
	recs := journal(t, r.state)
	ident := outputs(t, end(t, recs, "identity.incumbent"))
	var saved struct {
		Workload string `json:"workload"`
		Identity struct {
			Name    string `json:"name"`
			ImageID string `json:"image_id"`
		} `json:"identity"`
		Object struct {
			Kind string `json:"kind"`
		} `json:"object"`
	}
	readJSON(t, filepath.Join(r.state, end(t, recs, "deploy.candidate").Dir, "restore-manifest.json"), &saved)
	if saved.Workload != "StatefulSet" || saved.Object.Kind != "StatefulSet" || saved.Identity.Name != "sim-incumbent" || saved.Identity.ImageID != ident["image_id"] {
		t.Errorf("restore manifest %+v; want the incumbent's StatefulSet with image %v", saved, ident["image_id"])
	}
	blk := end(t, recs, "block.candidate")
	if blk.Status != engine.StatusSucceeded {
		t.Fatalf("block.candidate: %s (%s) %s", blk.Status, blk.Class, blk.Message)
	}
	if b, err := os.ReadFile(filepath.Join(r.state, blk.Dir, "requests.jsonl")); err != nil || strings.Count(string(b), "\n") != 9 {
		t.Errorf("block.candidate records: %v, %d", err, strings.Count(string(b), "\n"))
	}
	rst := end(t, recs, "restore.incumbent")
	var receipt struct {
		Action  string   `json:"action"`
		Stopped []string `json:"stopped"`
		Outcome string   `json:"outcome"`
	}
	readJSON(t, filepath.Join(r.state, rst.Dir, "receipt.json"), &receipt)
	if receipt.Action != "reapplied-from-manifest" || receipt.Outcome != "restored" || len(receipt.Stopped) != 1 || receipt.Stopped[0] != "statefulset sim-candidate" {
		t.Errorf("receipt %+v; want the saved StatefulSet reapplied after stopping statefulset sim-candidate", receipt)
	}
	restored := outputs(t, rst)
	if restored["image_id"] != ident["image_id"] || restored["incarnation"] == ident["incarnation"] {
		t.Errorf("restored image %v incarnation %v; want image %v in a new incarnation (was %v)", restored["image_id"], restored["incarnation"], ident["image_id"], ident["incarnation"])
	}
	for name, want := range map[string]int32{"sim-incumbent": 1, "sim-candidate": 0} {
		ss, err := r.kc.API.AppsV1().StatefulSets(r.kc.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil || ss.Spec.Replicas == nil || *ss.Spec.Replicas != want {
			t.Errorf("statefulset %s after the campaign: %v, replicas %v; want %d", name, err, ss.Spec.Replicas, want)
		}
	}
}

// TestEndpointTakenOver: while the candidate's open-loop block sends, its Deployment
// is scaled to 0 behind rigor's back and a bare pod of the incumbent's image, serving
// the same model, binds the endpoint and answers the rest of the block. Every
// response names the incarnation that answered, so the block fails with class
// identity ("another stack answered"), every record kept; once the block has ended
// the usurper leaves, and the incumbent is restored.
func TestEndpointTakenOver(t *testing.T) {
	r := newRun(t, "0.3", "deployments.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	watch, stop := context.WithCancel(ctx) // ends the watches when the apply ends first
	took := when(watch, func() bool { return sending(r.state, "block.taken") }, func() error { return r.takeOver(ctx) })
	// The usurper holds the endpoint's port: it leaves when the block has ended, as a
	// squatter someone evicts, so that the restore can roll out.
	usurperSeen := make(chan string, 1)
	left := when(watch, func() bool {
		recs, _, err := engine.ReadJournal(filepath.Join(r.state, engine.JournalFile))
		return err == nil && seq(recs, engine.KindStepEnd, "block.taken") >= 0
	}, func() error {
		p, err := r.kc.API.CoreV1().Pods(r.kc.Namespace).Get(ctx, "usurper", metav1.GetOptions{})
		usurperSeen <- fmt.Sprintf("%v %+v", err, p.Status.ContainerStatuses)
		return r.deletePods(ctx, "app=usurper")
	})
	code, out := r.apply(ctx, "testdata/takeover.hcl")
	stop()
	if err := <-took; err != nil {
		t.Fatalf("take the endpoint over: %v\n%s", err, out)
	}
	if err := <-left; err != nil {
		t.Fatalf("remove the usurper: %v\n%s", err, out)
	}
	usurper := <-usurperSeen
	if code != exitHeld {
		t.Fatalf("apply exited %d; want %d (held by the block's identity failure):\n%s", code, exitHeld, out)
	}
	recs := journal(t, r.state)
	blk := end(t, recs, "block.taken")
	if blk.Status != engine.StatusFailed || blk.Class != engine.ClassIdentity ||
		!strings.Contains(blk.Message, "container sim-candidate stopped during the block") || !strings.Contains(blk.Message, "another stack answered the block") {
		t.Fatalf("block.taken: %s (%s) %s; want failed (identity): stopped, another stack answered", blk.Status, blk.Class, blk.Message)
	}
	var served = map[string]int{}
	b, err := os.ReadFile(filepath.Join(r.state, blk.Dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	for _, l := range lines {
		var rec struct {
			ServedBy string `json:"served_by"`
		}
		_ = json.Unmarshal([]byte(l), &rec)
		served[rec.ServedBy]++
	}
	if len(lines) != 120 || len(served) < 3 {
		t.Errorf("%d records of 120; served by %v: want the candidate, the usurper and failures in between (the usurper at the block's end: %s)", len(lines), served, usurper)
	}
	restoredAfter(t, recs, blk)
}

// TestAgentPodKilled deletes the pod of completion index 2 of the agents' Indexed Job
// while the first block sends: the block fails with the stop-class agent naming that
// agent's address, every record received is kept (the lost agent's unsent requests
// as cancelled records), the campaign is held, and the incumbent is restored.
func TestAgentPodKilled(t *testing.T) {
	r := newRun(t, "0.3", "deployments.yaml")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	watch, stop := context.WithCancel(ctx) // ends the watch when the apply ends first
	killed := when(watch, func() bool { return sending(r.state, "incumbent_before") }, func() error {
		time.Sleep(500 * time.Millisecond)
		return r.deletePods(ctx, "app=rigor-agents,batch.kubernetes.io/job-completion-index=2")
	})
	code, out := r.apply(ctx, "campaign.hcl", "requests=96")
	stop()
	if err := <-killed; err != nil {
		t.Fatalf("delete the agent pod: %v\n%s", err, out)
	}
	if code != exitHeld {
		t.Fatalf("apply exited %d; want %d (held by the agent failure):\n%s", code, exitHeld, out)
	}
	recs := journal(t, r.state)
	blk := end(t, recs, `block.primary["incumbent_before/c3/r1"]`)
	lost := r.agents[2]
	// The kubelet stops the pod's process with SIGTERM: the agent streams what it
	// has, then says so; a SIGKILL would read "disappeared mid-block" instead.
	want := "agent " + lost + " failed mid-block: stopped: the agent process is shutting down"
	if blk.Status != engine.StatusFailed || blk.Class != engine.ClassAgent || !strings.Contains(blk.Message, want) {
		t.Fatalf("first block: %s (%s) %s; want failed (agent): %s", blk.Status, blk.Class, blk.Message, want)
	}
	b, err := os.ReadFile(filepath.Join(r.state, blk.Dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	cancelled := 0
	for _, l := range lines {
		var rec struct {
			Index   int    `json:"index"`
			Outcome string `json:"outcome"`
		}
		if json.Unmarshal([]byte(l), &rec) == nil && rec.Index%agentCount == 2 && rec.Outcome == "cancelled" {
			cancelled++
		}
	}
	if len(lines) != 96 || cancelled == 0 {
		t.Errorf("requests.jsonl: %d records of 96, %d cancelled of the lost agent's slice; want all kept and its unsent ones cancelled", len(lines), cancelled)
	}
	restoredAfter(t, recs, blk)
	// The lost index failed alone: the Job's other agents still serve.
	for _, p := range r.kc.Pods(t, "rigor-agents") {
		if idx := p.Labels["batch.kubernetes.io/job-completion-index"]; idx != "2" && (p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil) {
			t.Errorf("agent pod %s (index %s) is %s after index 2 was lost", p.Name, idx, p.Status.Phase)
		}
	}
}

// takeOver scales the candidate to 0 without rigor and starts a bare pod of the
// incumbent's image on the candidate's endpoint once its pods are gone (a pod that
// cannot bind the port exits: it does not restart).
func (r *run) takeOver(ctx context.Context) error {
	api := r.kc.API
	if _, err := api.AppsV1().Deployments(r.kc.Namespace).Patch(ctx, "sim-candidate", types.MergePatchType, []byte(`{"spec":{"replicas":0}}`), metav1.PatchOptions{}); err != nil {
		return err
	}
	if err := r.deletePods(ctx, "app=sim-candidate"); err != nil {
		return err
	}
	// The port is free once nothing accepts on it: a force-deleted pod's object goes
	// at once, its process only when the kubelet gets to it.
	for {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", r.port), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
	}
	d, err := api.AppsV1().Deployments(r.kc.Namespace).Get(ctx, "sim-incumbent", metav1.GetOptions{})
	if err != nil {
		return err
	}
	spec := *d.Spec.Template.Spec.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyNever
	for i := range spec.Containers {
		spec.Containers[i].ReadinessProbe = nil
	}
	_, err = api.CoreV1().Pods(r.kc.Namespace).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "usurper", Labels: map[string]string{"app": "usurper"}}, Spec: spec}, metav1.CreateOptions{})
	return err
}

// restoredAfter holds the restore to what every failure test needs: it succeeded
// after the failed block and closed the outage. It returns the restore's end record.
func restoredAfter(t *testing.T, recs []engine.Record, failed engine.Record) engine.Record {
	t.Helper()
	rst := end(t, recs, "restore.incumbent")
	if rst.Status != engine.StatusSucceeded || rst.Seq < failed.Seq {
		t.Fatalf("restore after %s: %s (%s) %s", failed.Step, rst.Status, rst.Class, rst.Message)
	}
	// An outage that never opened (the failure came before the candidate's deploy)
	// has nothing to close.
	if seq(recs, engine.KindOutageBegin, "") >= 0 && seq(recs, engine.KindOutageEnd, "restore.incumbent") < 0 {
		t.Error("the outage was not closed by the restore")
	}
	return rst
}

// when runs act once cond holds (polled every 50 ms) and delivers its error, or
// ctx's when ctx ends first.
func when(ctx context.Context, cond func() bool, act func() error) <-chan error {
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if cond() {
				done <- act()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		done <- ctx.Err()
	}()
	return done
}

// deletePods deletes the test namespace's pods that match selector at once.
func (r *run) deletePods(ctx context.Context, selector string) error {
	zero := int64(0)
	return r.kc.API.CoreV1().Pods(r.kc.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{LabelSelector: selector})
}

// sending reports whether a block whose attempt directory contains name has written
// a request record.
func sending(state, name string) bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(state, "attempts"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == "requests.jsonl" && strings.Contains(p, name) {
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
	r := newRun(t, "0.02", "")
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
