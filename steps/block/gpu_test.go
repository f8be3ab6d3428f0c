package block_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
)

// gpuCampaign is a sim host with two simulated GPUs, one target on it, and one block
// gated on the GPUs, with the incumbent restored at the end.
const gpuCampaign = `
campaign "gpu-%[1]s" {}

host "node" {
  runtime = "sim"
  gpus    = "sim"
  sim_gpus = 2
  sim_power_limit_watts = %[3]s
  gpu_interval = "20ms"
  %[5]s
}

target "incumbent" {
  host       = host.node
  container  = "gpu-%[1]s"
  profile    = "incumbent"
  endpoint   = "http://%[2]s"
  time_scale = 0.02
}

workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 1
  nominal_context = 512
  max_tokens      = 2048
}

gate "power" {
  power_limit_watts = %[4]s
  gpu_count         = 2
}

step "deploy" "incumbent" {
  target  = target.incumbent
  timeout = "30s"
}

step "block" "b" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = %[6]d
  gates       = [gate.power]
  timeout     = "60s"
  depends_on  = [step.deploy.incumbent]
}

step "restore" "incumbent" {
  target  = target.incumbent
  always  = true
  timeout = "30s"
}
`

var runSeq atomic.Int64

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// blockEnd runs the campaign and returns the block's step_end record and its attempt
// directory. Host names are unique per case: simulated GPUs are process-global.
func blockEnd(t *testing.T, name, limit, gateW, extraHost string, requests int) (engine.Record, string) {
	t.Helper()
	return blockEndWith(t, name, limit, gateW, extraHost, requests, nil)
}

// blockEndWith is blockEnd with the campaign's source rewritten by edit first.
func blockEndWith(t *testing.T, name, limit, gateW, extraHost string, requests int, edit func(string) string) (engine.Record, string) {
	t.Helper()
	// Simulated GPUs (and a drift injected into them) live as long as the process:
	// a fresh host name per run keeps -count=N runs independent.
	name = fmt.Sprintf("%s_%d", name, runSeq.Add(1))
	dir := t.TempDir()
	src := fmt.Sprintf(gpuCampaign, name, freeAddr(t), limit, gateW, extraHost, requests)
	if edit != nil {
		src = edit(src)
	}
	// The host name is the sim GPU key: make it unique per test case.
	src = strings.ReplaceAll(src, `host "node"`, `host "node_`+name+`"`)
	src = strings.ReplaceAll(src, `host.node`, `host.node_`+name)
	// The sim runtime's servers live in the test's directory and stop with the test.
	simDir := filepath.Join(dir, "sim")
	src = strings.Replace(src, `runtime = "sim"`, fmt.Sprintf("runtime = \"sim\"\n  sim_dir = %q", simDir), 1)
	h, err := sim.OpenHost("node_"+name, simDir)
	if err != nil {
		t.Fatal(err)
	}
	simtest.Cleanup(t, h)
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types()})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	state := filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := engine.Apply(ctx, p, steps.Registry(), engine.Options{StateDir: state, Log: zerolog.Nop()}); err != nil {
		t.Fatalf("apply: %v", err)
	}
	f, err := os.Open(filepath.Join(state, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r engine.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.Kind == "step_end" && r.Step == "block.b" {
			return r, filepath.Join(state, r.Dir)
		}
	}
	t.Fatal("no step_end for block.b in the journal")
	return engine.Record{}, ""
}

func TestBlockSamplesSimGPUs(t *testing.T) {
	rec, dir := blockEnd(t, "ok", "300", "300", "", 3)
	if rec.Status != engine.StatusSucceeded {
		t.Fatalf("block %s (%s): %s", rec.Status, rec.Class, rec.Message)
	}
	f, err := os.Open(filepath.Join(dir, "gpu.jsonl"))
	if err != nil {
		t.Fatalf("gpu.jsonl missing: %v", err)
	}
	defer f.Close()
	perDev := map[int]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var row struct {
			Index       int     `json:"index"`
			UUID        string  `json:"uuid"`
			PowerLimitW float64 `json:"power_limit_w"`
			Error       string  `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &row); err != nil {
			t.Fatal(err)
		}
		if row.Error != "" || row.PowerLimitW != 300 || row.UUID == "" {
			t.Fatalf("bad row: %s", sc.Text())
		}
		perDev[row.Index]++
	}
	if len(perDev) != 2 || perDev[0] < 2 || perDev[0] != perDev[1] {
		t.Fatalf("rows per device %v: want both GPUs, the same count, at least the first and last sample", perDev)
	}
	var hashed bool
	for _, a := range rec.Artefacts {
		if strings.HasSuffix(a.Path, "/gpu.jsonl") {
			hashed = true
		}
	}
	if !hashed {
		t.Errorf("gpu.jsonl is not among the block's hashed artefacts: %+v", rec.Artefacts)
	}
	gate, err := os.ReadFile(filepath.Join(dir, "gpu-gate.json"))
	if err != nil || strings.Count(string(gate), `"check": "power_limit_watts"`) != 2 {
		t.Errorf("gpu-gate.json should hold one power check per GPU: %v\n%s", err, gate)
	}
}

func TestBlockGPUGateMismatch(t *testing.T) {
	rec, dir := blockEnd(t, "gate", "250", "300", "", 3)
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassGate {
		t.Fatalf("block %s (%s): %s; want failed (gate)", rec.Status, rec.Class, rec.Message)
	}
	if !strings.Contains(rec.Message, "limit 250 W") || !strings.Contains(rec.Message, "300 W expected") {
		t.Errorf("message should name the configured and expected limits: %s", rec.Message)
	}
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil {
		t.Error("a block whose gate failed sent requests")
	}
}

func TestBlockPowerDrift(t *testing.T) {
	// The limit of both GPUs drops to 280 W 150 ms after the host's GPUs first appear
	// (the block's own start); the block runs for longer than that.
	rec, dir := blockEnd(t, "drift", "300", "300", `sim_power_drift_at = "150ms"
  sim_power_drift_watts = 280`, 40)
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassPowerDrift {
		t.Fatalf("block %s (%s): %s; want failed (power_drift)", rec.Status, rec.Class, rec.Message)
	}
	if !strings.Contains(rec.Message, "300 W -> 280 W") {
		t.Errorf("message should show the change: %s", rec.Message)
	}
	sum, err := os.ReadFile(filepath.Join(dir, "gpu-summary.json"))
	if err != nil || !strings.Contains(string(sum), `"to_w": 280`) {
		t.Errorf("gpu-summary.json should record the change: %v\n%s", err, sum)
	}
}

// dcgmHost turns the campaign's host into one whose GPUs a dcgm-exporter at url
// reports: the sim sizing attributes go, since a dcgm host reads none of them.
func dcgmHost(url string) func(string) string {
	return func(src string) string {
		var out []string
		for _, line := range strings.Split(src, "\n") {
			trim := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trim, "sim_gpus"), strings.HasPrefix(trim, "sim_power_limit_watts"):
				continue
			case trim == `gpus    = "sim"`:
				line = fmt.Sprintf("  gpus    = \"dcgm\"\n  dcgm_endpoint = %q", url)
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
}

// simExporter serves simulated GPUs as dcgm-exporter does, over a real socket.
func simExporter(t *testing.T, c steps.SimDCGMConfig) string {
	t.Helper()
	h, err := steps.SimDCGMHandler(c)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// A host whose GPUs come from a dcgm-exporter is gated and sampled as an NVML host
// is: the rows in gpu.jsonl are the exporter's devices, and a limit that differs
// from the gate fails it with the same class and wording.
func TestBlockSamplesDCGMGPUs(t *testing.T) {
	node := fmt.Sprintf("dcgm-ok-%d", runSeq.Add(1))
	url := simExporter(t, steps.SimDCGMConfig{Host: node, Devices: 2, PowerLimitW: 300})
	rec, dir := blockEndWith(t, "dcgm_ok", "0", "300", "", 3, dcgmHost(url))
	if rec.Status != engine.StatusSucceeded {
		t.Fatalf("block %s (%s): %s", rec.Status, rec.Class, rec.Message)
	}
	b, err := os.ReadFile(filepath.Join(dir, "gpu.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"power_limit_w":300`); n < 4 {
		t.Fatalf("want at least a first and last sample of both exporter GPUs at 300 W, got %d rows:\n%s", n, b)
	}
	devs, err := steps.ReadGPUs(steps.GPUQuery{Kind: "dcgm", DCGMEndpoint: url})
	if err != nil || len(devs) != 2 {
		t.Fatalf("reading the exporter: %v %+v", err, devs)
	}
	for _, d := range devs {
		if !strings.Contains(string(b), fmt.Sprintf(`"uuid":%q`, d.UUID)) {
			t.Fatalf("rows should carry the exporter's device %d (%s):\n%s", d.Index, d.UUID, b)
		}
	}

	node = fmt.Sprintf("dcgm-gate-%d", runSeq.Add(1))
	url = simExporter(t, steps.SimDCGMConfig{Host: node, Devices: 2, PowerLimitW: 250})
	rec, _ = blockEndWith(t, "dcgm_gate", "0", "300", "", 3, dcgmHost(url))
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassGate || !strings.Contains(rec.Message, "limit 250 W") {
		t.Fatalf("block %s (%s): %s; want failed (gate) naming the exporter's 250 W", rec.Status, rec.Class, rec.Message)
	}
}

// A limit that changes on the exporter's node during a block is power_drift, as
// with NVML.
func TestBlockDCGMPowerDrift(t *testing.T) {
	node := fmt.Sprintf("dcgm-drift-%d", runSeq.Add(1))
	url := simExporter(t, steps.SimDCGMConfig{Host: node, Devices: 2, PowerLimitW: 300, DriftAt: 400 * time.Millisecond, DriftW: 280})
	rec, _ := blockEndWith(t, "dcgm_drift", "0", "300", "", 60, dcgmHost(url))
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassPowerDrift || !strings.Contains(rec.Message, "300 W -> 280 W") {
		t.Fatalf("block %s (%s): %s; want failed (power_drift) 300 W -> 280 W", rec.Status, rec.Class, rec.Message)
	}
}

// An exporter that cannot be reached fails the block before it sends a request,
// naming the URL.
func TestBlockDCGMUnreachable(t *testing.T) {
	rec, dir := blockEndWith(t, "dcgm_down", "0", "300", "", 3, dcgmHost("http://"+freeAddr(t)+"/metrics"))
	if rec.Status != engine.StatusFailed || !strings.Contains(rec.Message, "DCGM exporter http://") || !strings.Contains(rec.Message, "unreachable") {
		t.Fatalf("block %s (%s): %s; want a failure naming the exporter URL", rec.Status, rec.Class, rec.Message)
	}
	if _, err := os.Stat(filepath.Join(dir, "requests.jsonl")); err == nil {
		t.Error("a block whose GPUs could not be read sent requests")
	}
}
