package block_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// heldOpts shape a block of these tests.
type heldOpts struct {
	requests int
	bare     bool    // no container: no identity gate
	rate     float64 // open loop at this many requests per second; 0 = closed loop
}

// heldBlock runs the block step on target tgt as the engine would, with history as
// what earlier attempts recorded; during, when set, runs beside the block.
func heldBlock(t *testing.T, addr string, tgt cty.Value, history []engine.Ended, o heldOpts, during func(dir string)) (engine.Result, string) {
	t.Helper()
	wl := cty.ObjectVal(map[string]cty.Value{
		"corpus": cty.StringVal("synthetic-summary"), "corpus_seed": cty.NumberIntVal(7), "nominal_context": cty.NumberIntVal(512),
		"prefixes": cty.StringVal("unique"), "max_tokens": cty.NumberIntVal(96), "reasoning_effort": cty.StringVal("low"),
	})
	attrs := map[string]cty.Value{
		"target": tgt, "workload": wl, "concurrency": cty.NumberIntVal(2), "requests": cty.NumberIntVal(int64(o.requests)),
		"gates": cty.TupleVal([]cty.Value{cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("before_block"), "identity": cty.BoolVal(!o.bare), "health": cty.True, "idle": cty.True})}),
	}
	if o.rate > 0 {
		attrs["mode"], attrs["rate"] = cty.StringVal("open"), cty.NumberFloatVal(o.rate)
	}
	for name, s := range (block.Step{}).Spec() {
		if _, ok := attrs[name]; !ok {
			attrs[name] = cty.NullVal(hcldec.ImpliedType(s))
		}
	}
	dir := t.TempDir()
	_, name, _ := strings.Cut(addr, ".")
	sc := &engine.StepContext{
		Addr: addr, Instance: &plans.Instance{Addr: addr, Type: "block", Name: name, Meta: plans.Meta{Timeout: time.Minute}},
		Config: cty.ObjectVal(attrs), Campaign: "held", Attempt: 1, Dir: dir, Log: zerolog.Nop(),
		History: func() []engine.Ended { return history },
	}
	var wg sync.WaitGroup
	if during != nil {
		wg.Go(func() { during(dir) })
	}
	res := block.Step{}.Run(context.Background(), sc)
	wg.Wait()
	return res, dir
}

// deployed runs the deploy step for tgt and returns its history entry.
func deployed(t *testing.T, tgt cty.Value) engine.Ended {
	t.Helper()
	attrs := map[string]cty.Value{"target": tgt}
	res := deploy.Step{}.Run(context.Background(), &engine.StepContext{Config: cty.ObjectVal(attrs), Dir: t.TempDir(), Log: zerolog.Nop()})
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("deploy: %s (%s) %s", res.Status, res.Class, res.Message)
	}
	return engine.Ended{Addr: "deploy.incumbent", Type: "deploy", Attempt: 1, Status: engine.StatusSucceeded, Outputs: res.Outputs}
}

func ended(addr string, res engine.Result) engine.Ended {
	return engine.Ended{Addr: addr, Type: "block", Attempt: 1, Status: res.Status, Class: res.Class, Outputs: res.Outputs}
}

func simTargetOn(h *sim.Host, extra map[string]cty.Value) cty.Value {
	attrs := map[string]cty.Value{
		"name": cty.StringVal("incumbent"), "container": cty.StringVal("inc"), "image": cty.StringVal("sim:incumbent"),
		"endpoint": cty.StringVal("http://" + freeAddrOf()), "time_scale": cty.NumberFloatVal(0.002),
	}
	for k, v := range extra {
		attrs[k] = v
	}
	return simtest.Target(h, attrs)
}

// Before every block the container must be the one the deploy recorded and the one
// the previous block saw; a restart between blocks fails the next block's identity
// gate, naming both incarnations, before any request is sent.
func TestBlockIsHeldToItsDeployAndThePreviousBlock(t *testing.T) {
	cases := map[string]struct {
		between  func(t *testing.T, h *sim.Host)
		wantHeld string // the record the failure names; "" = block 2 succeeds
	}{
		"unchanged": {between: func(*testing.T, *sim.Host) {}},
		"restarted between blocks": {between: func(t *testing.T, h *sim.Host) {
			if err := h.InjectRestart("inc"); err != nil {
				t.Fatal(err)
			}
		}, wantHeld: "block.b1 (attempt 1)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := simtest.Host(t, "held")
			tgt := simTargetOn(h, nil)
			history := []engine.Ended{deployed(t, tgt)}
			res1, _ := heldBlock(t, "block.b1", tgt, history, heldOpts{requests: 4}, nil)
			if res1.Status != engine.StatusSucceeded {
				t.Fatalf("block 1: %s (%s) %s", res1.Status, res1.Class, res1.Message)
			}
			first, _ := h.Inspect("inc")
			for _, out := range []string{"container_id", "image_id", "incarnation", "endpoint"} {
				if got, want := res1.Outputs.GetAttr(out).AsString(), history[0].Outputs.GetAttr(out).AsString(); got != want {
					t.Errorf("block output %s = %q, the deploy recorded %q", out, got, want)
				}
			}
			if _, err := time.Parse(time.RFC3339Nano, res1.Outputs.GetAttr("checked_at").AsString()); err != nil {
				t.Errorf("checked_at: %v", err)
			}
			history = append(history, ended("block.b1", res1))
			tc.between(t, h)
			now, _ := h.Inspect("inc")
			res2, dir := heldBlock(t, "block.b2", tgt, history, heldOpts{requests: 4}, nil)
			if tc.wantHeld == "" {
				if res2.Status != engine.StatusSucceeded {
					t.Fatalf("block 2: %s (%s) %s", res2.Status, res2.Class, res2.Message)
				}
				return
			}
			if res2.Status != engine.StatusFailed || res2.Class != engine.ClassIdentity {
				t.Fatalf("block 2: %s (%s) %s; want failed (identity)", res2.Status, res2.Class, res2.Message)
			}
			for _, w := range []string{"gate before_block: identity", tc.wantHeld, "incarnation " + first.Incarnation + " → " + now.Incarnation} {
				if !strings.Contains(res2.Message, w) {
					t.Errorf("message %q lacks %q", res2.Message, w)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil {
				t.Error("block 2 sent requests although its identity gate failed")
			}
		})
	}
}

// The deploy's record holds the first block too: a restart after the deploy is
// caught before the first request.
func TestFirstBlockIsHeldToTheDeploy(t *testing.T) {
	h := simtest.Host(t, "held")
	tgt := simTargetOn(h, nil)
	history := []engine.Ended{deployed(t, tgt)}
	if err := h.InjectRestart("inc"); err != nil {
		t.Fatal(err)
	}
	res, _ := heldBlock(t, "block.b1", tgt, history, heldOpts{requests: 4}, nil)
	if res.Status != engine.StatusFailed || res.Class != engine.ClassIdentity || !strings.Contains(res.Message, "deploy.incumbent (attempt 1) recorded") {
		t.Fatalf("%s (%s) %s; want failed (identity) naming the deploy", res.Status, res.Class, res.Message)
	}
}

// waitRecords waits until requests.jsonl in dir holds n lines.
func waitRecords(dir string, n int) {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl")); err == nil && strings.Count(string(b), "\n") >= n {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func readRecords(t *testing.T, dir string) []loadgen.Record {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := loadgen.ReadRecords(f)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func findings(t *testing.T, dir string) []string {
	t.Helper()
	var ev struct {
		Findings []string `json:"findings"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "identity.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ev); err != nil {
		t.Fatal(err)
	}
	return ev.Findings
}

// Another server takes the endpoint over mid-block: the incumbent's process dies and
// another profile, serving the same model name, binds the same port. Every response
// names the incarnation that answered, so the block fails with class identity, and
// every record stays.
func TestBlockTakeoverOnTheSimRuntime(t *testing.T) {
	h := simtest.Host(t, "takeover")
	prof, _ := sim.LookupProfile("incumbent")
	tgt := simTargetOn(h, map[string]cty.Value{"time_scale": cty.NumberFloatVal(0.01)})
	history := []engine.Ended{deployed(t, tgt)}
	incumbent, _ := h.Inspect("inc")
	const requests = 60
	var usurper sim.ContainerInfo
	// Open loop, so that requests keep arriving while the other server starts: three
	// seconds of arrivals leave room for a slow start on a loaded machine.
	res, dir := heldBlock(t, "block.b", tgt, history, heldOpts{requests: requests, rate: 20}, func(dir string) {
		waitRecords(dir, 4)
		if err := h.Kill("inc"); err != nil {
			t.Error(err)
			return
		}
		listen := strings.TrimPrefix(incumbent.Endpoint, "http://")
		spec := sim.ContainerSpec{Name: "usurper", Image: "sim:flare", Listen: listen, Config: sim.Config{ModelName: prof.ServedModelName, TimeScale: 0.01}}
		if _, err := h.Create(spec); err != nil {
			t.Error(err)
			return
		}
		if err := h.Start("usurper"); err != nil {
			t.Error(err)
		}
		usurper, _ = h.Inspect("usurper")
	})
	if res.Status != engine.StatusFailed || res.Class != engine.ClassIdentity {
		t.Fatalf("%s (%s) %s; want failed (identity)", res.Status, res.Class, res.Message)
	}
	recs := readRecords(t, dir)
	if len(recs) != requests {
		t.Fatalf("%d records kept, want all %d", len(recs), requests)
	}
	by := map[string]int{}
	for _, r := range recs {
		by[r.ServedBy]++
	}
	if by[incumbent.Incarnation] == 0 || by[usurper.Incarnation] == 0 {
		t.Fatalf("records by server %v; want some from the incumbent %s and some from the usurper %s", by, incumbent.Incarnation, usurper.Incarnation)
	}
	want := fmt.Sprintf("%d of ", by[usurper.Incarnation])
	for _, w := range []string{"container inc stopped during the block", "another stack answered the block", want, usurper.Incarnation} {
		if !strings.Contains(res.Message, w) {
			t.Errorf("message lacks %q: %s", w, res.Message)
		}
	}
	if len(findings(t, dir)) == 0 {
		t.Error("identity.json records no finding")
	}
	if _, err := os.Stat(filepath.Join(dir, "result.json")); err != nil {
		t.Errorf("result.json: %v", err)
	}
}

// A stack that names no incarnation (identity_header = "") is still caught when it
// is replaced mid-block: its counters go backwards, or its model list changes.
func TestBlockTakeoverWithoutAnIdentityHeader(t *testing.T) {
	cases := map[string]struct {
		model string // the new server's model name; "" = the same
		want  []string
	}{
		"counters reset": {want: []string{"native counters went backwards", "vllm:generation_tokens_total{"}},
		"models changed": {model: "another-model", want: []string{"/v1/models changed during the block", "id=another-model"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			prof, _ := sim.LookupProfile("incumbent")
			addr := freeAddrOf()
			rn, err := sim.Listen(addr, sim.Config{Profile: prof, TimeScale: 0.01})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			current := rn
			t.Cleanup(func() { mu.Lock(); current.Close(); mu.Unlock() })
			tgt := cty.ObjectVal(map[string]cty.Value{
				"name": cty.StringVal("bare"), "host": cty.StringVal("bare"), "container": cty.StringVal("none"),
				"endpoint": cty.StringVal("http://" + addr), "image": cty.StringVal("sim:incumbent"), "identity_header": cty.StringVal(""),
			})
			// Traffic before the block, so that the counters have something to lose.
			if warm, _ := heldBlock(t, "block.warm", tgt, nil, heldOpts{requests: 16, bare: true}, nil); warm.Status != engine.StatusSucceeded {
				t.Fatalf("warm-up block: %s %s", warm.Status, warm.Message)
			}
			const requests = 12
			res, dir := heldBlock(t, "block.b", tgt, nil, heldOpts{requests: requests, bare: true, rate: 40}, func(dir string) {
				waitRecords(dir, 2)
				mu.Lock()
				defer mu.Unlock()
				current.Close()
				next, err := sim.Listen(addr, sim.Config{Profile: prof, TimeScale: 0.01, ModelName: tc.model})
				if err != nil {
					t.Error(err)
					return
				}
				current = next
			})
			if res.Status != engine.StatusFailed || res.Class != engine.ClassIdentity {
				t.Fatalf("%s (%s) %s; want failed (identity)", res.Status, res.Class, res.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Message, w) {
					t.Errorf("message lacks %q: %s", w, res.Message)
				}
			}
			if recs := readRecords(t, dir); len(recs) != requests {
				t.Errorf("%d records kept, want %d", len(recs), requests)
			} else if recs[0].ServedBy != "" {
				t.Errorf("identity_header = \"\" still recorded served_by %q", recs[0].ServedBy)
			}
		})
	}
}

// Through the engine: the history a block is held to is the journal's. An exec step
// sits between two blocks; the container restarts while it runs.
func TestRestartBetweenBlocksThroughTheEngine(t *testing.T) {
	dir := t.TempDir()
	simDir := filepath.Join(dir, "sim")
	h, err := sim.OpenHost("node", simDir)
	if err != nil {
		t.Fatal(err)
	}
	simtest.Cleanup(t, h)
	src := fmt.Sprintf(`
campaign "held" {}
host "node" {
  runtime = "sim"
  sim_dir = %q
}
target "incumbent" {
  host       = host.node
  container  = "inc"
  profile    = "incumbent"
  endpoint   = "http://%s"
  time_scale = 0.002
}
workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 1
  nominal_context = 512
  max_tokens       = 96
  reasoning_effort = "low"
}
gate "g" {
  identity = true
  health   = true
}
step "deploy" "incumbent" {
  target  = target.incumbent
  timeout = "30s"
}
step "block" "a" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  gates       = [gate.g]
  depends_on  = [step.deploy.incumbent]
}
step "exec" "pause" {
  command    = ["sleep", "1"]
  depends_on = [step.block.a]
}
step "block" "b" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  gates       = [gate.g]
  depends_on  = [step.exec.pause]
}
`, simDir, freeAddrOf())
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types()})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	state := filepath.Join(dir, "state")
	journal := filepath.Join(state, engine.JournalFile)
	var before, after string
	restarted := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(journal); err == nil && pauseStarted.Match(b) {
				info, _ := h.Inspect("inc")
				before = info.Incarnation
				err := h.InjectRestart("inc")
				info, _ = h.Inspect("inc")
				after = info.Incarnation
				restarted <- err
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		restarted <- fmt.Errorf("exec.pause never started")
	}()
	if _, err := engine.Apply(context.Background(), p, steps.Registry(), engine.Options{StateDir: state, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(journal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ends := map[string]engine.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r engine.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == engine.KindStepEnd {
			ends[r.Step] = r
		}
	}
	if a := ends["block.a"]; a.Status != engine.StatusSucceeded {
		t.Fatalf("block.a: %s %s", a.Status, a.Message)
	}
	b := ends["block.b"]
	if b.Status != engine.StatusFailed || b.Class != engine.ClassIdentity || !strings.Contains(b.Message, "block.a (attempt 1) recorded") ||
		!strings.Contains(b.Message, before+" → "+after) {
		t.Fatalf("block.b: %s (%s) %s; want failed (identity) naming block.a and incarnation %s → %s", b.Status, b.Class, b.Message, before, after)
	}
}

var pauseStarted = regexp.MustCompile(`"kind":"step_start"[^\n]*"step":"exec.pause"`)

// freeAddrOf returns a loopback address nothing listens on right now.
func freeAddrOf() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A container that stopped before the block (killed, or another deploy took its
// place) fails the identity gate with class identity before any request is sent.
func TestBlockOnAStoppedContainerIsIdentity(t *testing.T) {
	h := simtest.Host(t, "stopped")
	tgt := simTargetOn(h, nil)
	history := []engine.Ended{deployed(t, tgt)}
	if err := h.Kill("inc"); err != nil {
		t.Fatal(err)
	}
	res, dir := heldBlock(t, "block.b1", tgt, history, heldOpts{requests: 4}, nil)
	if res.Status != engine.StatusFailed || res.Class != engine.ClassIdentity || !strings.Contains(res.Message, "container inc is") || !strings.Contains(res.Message, "not running") {
		t.Fatalf("%s (%s) %s; want failed (identity): container inc not running", res.Status, res.Class, res.Message)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl")); err == nil && len(b) > 0 {
		t.Errorf("requests were sent to a stopped target:\n%s", b)
	}
}

// The container is running, but another server answers the target's endpoint: the
// incarnation the endpoint names is not the container's, so the block fails with
// class identity before sending anything.
func TestBlockEndpointAnsweredByAnotherServerIsIdentity(t *testing.T) {
	h := simtest.Host(t, "elsewhere")
	prof, _ := sim.LookupProfile("incumbent")
	tgt := simTargetOn(h, nil)
	deployed(t, tgt)
	other := freeAddrOf()
	spec := sim.ContainerSpec{Name: "other", Image: "sim:flare", Listen: other, Config: sim.Config{ModelName: prof.ServedModelName, TimeScale: 0.002}}
	if _, err := h.Create(spec); err != nil {
		t.Fatal(err)
	}
	if err := h.Start("other"); err != nil {
		t.Fatal(err)
	}
	otherInfo, _ := h.Inspect("other")
	attrs := tgt.AsValueMap()
	attrs["endpoint"] = cty.StringVal("http://" + other)
	res, dir := heldBlock(t, "block.b1", cty.ObjectVal(attrs), nil, heldOpts{requests: 4}, nil)
	for _, w := range []string{"is answered by incarnation " + fmt.Sprintf("%q", otherInfo.Incarnation), "not by container inc", "another server holds the endpoint"} {
		if res.Class != engine.ClassIdentity || !strings.Contains(res.Message, w) {
			t.Fatalf("%s (%s) %s; want failed (identity) saying %q", res.Status, res.Class, res.Message, w)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl")); err == nil && len(b) > 0 {
		t.Errorf("requests were sent to another server:\n%s", b)
	}
}

// A container the OOM killer ended before the block fails the identity gate with
// class oom, before any request is sent.
func TestBlockOnAnOOMKilledContainerIsOOM(t *testing.T) {
	h := simtest.Host(t, "oomed")
	tgt := simTargetOn(h, nil)
	history := []engine.Ended{deployed(t, tgt)}
	if err := h.InjectOOM("inc"); err != nil {
		t.Fatal(err)
	}
	res, dir := heldBlock(t, "block.b1", tgt, history, heldOpts{requests: 4}, nil)
	if res.Status != engine.StatusFailed || res.Class != engine.ClassOOM || !strings.Contains(res.Message, "container inc was OOM-killed") {
		t.Fatalf("%s (%s) %s; want failed (oom): container inc was OOM-killed", res.Status, res.Class, res.Message)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "requests.jsonl")); err == nil && len(b) > 0 {
		t.Errorf("requests were sent to an OOM-killed target:\n%s", b)
	}
}

// Requests the engine still counts running after the block (here another client's,
// sent while the block ran, far longer than the block's own) fail it as undrained
// once the server has had its few seconds to drain: its figures may not have been
// the block's alone.
func TestRequestsLeftAfterTheBlockAreUndrained(t *testing.T) {
	h := simtest.Host(t, "undrained")
	tgt := simTargetOn(h, map[string]cty.Value{"time_scale": cty.NumberFloatVal(0.05)})
	history := []engine.Ended{deployed(t, tgt)}
	endpoint := tgt.GetAttr("endpoint").AsString()
	prof, _ := sim.LookupProfile("incumbent")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, _ := heldBlock(t, "block.b1", tgt, history, heldOpts{requests: 8}, func(dir string) {
		waitRecords(dir, 1)
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"a long one"}],"max_tokens":30000,"ignore_eos":true,"stream":true}`, prof.ServedModelName)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		go func() {
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	})
	if res.Status != engine.StatusFailed || res.Class != engine.ClassUndrained || !strings.Contains(res.Message, "remained after the block") {
		t.Fatalf("%s (%s) %s; want failed (undrained)", res.Status, res.Class, res.Message)
	}
}
