package plans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
)

// laneCampaign writes a campaign of at least size bytes built from lanes, each the
// shape of the quickstart: a target and a workload of its own, an oracle exec,
// deploy, identity, a two-concurrency pilot, frozen counts, an ABBA-style matrix of
// two arms x C1/C4 x (priming + 3 repetitions), and a restore. Lane i's deploy waits
// for lane i-1's restore, so the whole file is one dependency chain, as a long
// campaign is. It returns the path, the lane count and the number of instances.
func laneCampaign(tb testing.TB, size int) (string, int, int) {
	tb.Helper()
	var b strings.Builder
	b.WriteString(`campaign "lanes" {
  description = "Generated: lanes of pilot, frozen counts, matrix and restore."
  outage {
    budget  = "2000h"
    reserve = "400h" # every lane's restore, 1 s each at most, fits
  }
}

variable "port" {
  type    = number
  default = 18080
}

variable "time_scale" {
  type    = number
  default = 0.02
}

variable "api_key" {
  type      = string
  default   = "sk-generated"
  sensitive = true
}

host "node" {
  runtime = "sim"
  gpus    = "sim"
}

gate "before_block" {
  health   = true
  idle     = true
  identity = true
}
`)
	lanes := 0
	for b.Len() < size {
		i := lanes
		fmt.Fprintf(&b, `
# Lane %[1]d: its own target and workload, pilot, frozen counts, matrix, restore.
target "t%[1]d" {
  host       = host.node
  container  = "lane-%[1]d"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:${var.port + %[1]d %% 1000}"
  time_scale = var.time_scale
  api_key    = var.api_key
}

workload "w%[1]d" {
  corpus           = "synthetic-summary"
  corpus_seed      = %[2]d
  nominal_context  = 10240
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  reasoning_effort = "max"
  prefixes         = "unique"
}

step "exec" "oracle%[1]d" {
  command       = ["sh", "-c", "grep -c PASS fixtures/oracle.txt && ! grep -q FAIL fixtures/oracle.txt"]
  env           = { LANE = "%[1]d", API_KEY = var.api_key }
  failure_class = "gate"
  timeout       = "30s"
}

step "deploy" "d%[1]d" {
  target     = target.t%[1]d
  phase      = "setup"
  timeout    = "1m"
  depends_on = [%[3]s]
}

step "identity" "id%[1]d" {
  target  = target.t%[1]d
  timeout = "1m"
}

step "block" "pilot%[1]d" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.t%[1]d
  workload    = workload.w%[1]d
  concurrency = each.value
  requests    = 16
  gates       = [gate.before_block]
  phase       = "pilot"
  timeout     = "2m"
  uses        = ["gpu"]
  depends_on  = [step.identity.id%[1]d]
}

step "freeze" "counts%[1]d" {
  values = {
    for k, b in step.block.pilot%[1]d :
    k => min(48, ceil_multiple(b.requests * 0.8 / b.elapsed_s, b.concurrency))
  }
}

matrix "m%[1]d" {
  workload    = workload.w%[1]d
  concurrency = [1, 4]
  repetitions = 3
  priming     = true
  requests    = step.freeze.counts%[1]d.values
  timeout     = "2m"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "before" {
    target = target.t%[1]d
    setup  = [step.freeze.counts%[1]d]
  }
  arm "after" {
    target = target.t%[1]d
  }
}

step "restore" "r%[1]d" {
  target     = target.t%[1]d
  always     = true
  timeout    = "1s" # every lane's restore fits in the reserve together
  depends_on = [step.block.m%[1]d]
}
`, i, 4342+i, prevRestore(i))
		lanes++
	}
	path := filepath.Join(tb.TempDir(), "lanes.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	// Per lane: exec, deploy, identity, 2 pilots, freeze, 2 arms x 2 concurrencies x
	// (priming + 3), restore.
	return path, lanes, lanes * (1 + 1 + 1 + 2 + 1 + 2*2*4 + 1)
}

func prevRestore(i int) string {
	if i == 0 {
		return "step.exec.oracle0"
	}
	return fmt.Sprintf("step.restore.r%d", i-1)
}

// TestLaneCampaign checks the generated campaign the benchmarks time: every lane's
// instances, each lane waiting for the previous lane's restore.
func TestLaneCampaign(t *testing.T) {
	path, lanes, want := laneCampaign(t, 40_000)
	p := mustLoad(t, path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
	if len(p.Instances) != want || lanes < 10 {
		t.Fatalf("%d instances from %d lanes, want %d", len(p.Instances), lanes, want)
	}
	d, ok := p.Instance("deploy.d5")
	if !ok || !slices.Contains(d.DependsOn, "restore.r4") {
		t.Errorf("deploy.d5 waits for %v, want restore.r4 among them", d.DependsOn)
	}
	// The last instance is the last lane's restore: lanes run one after another.
	if last := p.Instances[len(p.Instances)-1].Addr; last != fmt.Sprintf("restore.r%d", lanes-1) {
		t.Errorf("last instance %s", last)
	}
}
