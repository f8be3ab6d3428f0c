package plans_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/zclconf/go-cty/cty"
)

// bigCampaign writes a campaign of 50 arms x 10 concurrencies x (priming + 19
// repetitions) = 10,000 matrix blocks, 49 arm setup deploys, a for_each pilot of 10
// and a freeze: 10,060 instances.
func bigCampaign(tb testing.TB) (string, int) {
	tb.Helper()
	const arms, concs, reps, pilots = 50, 10, 19, 10
	var b strings.Builder
	b.WriteString(`campaign "big" {
  outage {
    budget  = "48h"
    reserve = "1h"
  }
}

variable "api_key" {
  sensitive = true
  default   = "sk-bench"
}

host "node" {
  gpus = "sim"
}

workload "w" {
  corpus     = "synthetic-summary"
  max_tokens = 256
}

gate "g" {
  health = true
  idle   = true
}
`)
	for a := 0; a < arms; a++ {
		fmt.Fprintf(&b, "\ntarget \"t%d\" {\n  host     = host.node\n  endpoint = \"http://127.0.0.1:%d\"\n  api_key  = var.api_key\n}\n", a, 8000+a)
	}
	b.WriteString("\nstep \"block\" \"pilot\" {\n  for_each    = {")
	for i := 1; i <= pilots; i++ {
		fmt.Fprintf(&b, " c%d = %d,", i, i)
	}
	b.WriteString(" }\n  target      = target.t0\n  workload    = workload.w\n  concurrency = each.value\n  requests    = 16\n  phase       = \"pilot\"\n}\n")
	b.WriteString("\nstep \"freeze\" \"counts\" {\n  values = { for k, p in step.block.pilot : k => ceil_multiple(120 / p.seconds_per_request, p.concurrency) }\n}\n")
	for a := 1; a < arms; a++ {
		fmt.Fprintf(&b, "\nstep \"deploy\" \"arm%d\" {\n  target = target.t%d\n}\n", a, a)
	}
	b.WriteString("\nmatrix \"primary\" {\n  workload    = workload.w\n  concurrency = [")
	var req []string
	for c := 1; c <= concs; c++ {
		if c > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d", c)
		req = append(req, fmt.Sprintf("c%d = %d", c, 8*c))
	}
	fmt.Fprintf(&b, "]\n  repetitions = %d\n  priming     = true\n  requests    = { %s }\n  timeout     = \"600s\"\n  gates       = [gate.g]\n  uses        = [\"gpu\"]\n", reps, strings.Join(req, ", "))
	for a := 0; a < arms; a++ {
		fmt.Fprintf(&b, "  arm \"a%d\" {\n    target = target.t%d\n", a, a)
		if a > 0 {
			fmt.Fprintf(&b, "    setup  = [step.deploy.arm%d]\n", a)
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	path := filepath.Join(tb.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	return path, arms*concs*(reps+1) + (arms - 1) + pilots + 1
}

// BenchmarkLoad10kInstances times what plan and apply do before anything runs:
// load (parse, evaluate, expand, order) and hash a 10,000-block campaign.
func BenchmarkLoad10kInstances(b *testing.B) {
	path, want := bigCampaign(b)
	opts := plans.Options{StepTypes: testStepTypes(), Env: []string{}}
	b.ReportAllocs()
	for b.Loop() {
		p := mustLoad(b, path, opts)
		if len(p.Instances) != want {
			b.Fatalf("%d instances, want %d", len(p.Instances), want)
		}
		mustHash(b, p)
	}
}

// TestBigCampaignOrder checks the generated campaign the benchmark uses, so a
// benchmark that passes is timing the right plan.
func TestBigCampaignOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 10,000 instances")
	}
	path, want := bigCampaign(t)
	p := mustLoad(t, path, plans.Options{})
	if len(p.Instances) != want {
		t.Fatalf("%d instances, want %d", len(p.Instances), want)
	}
	// Each deploy runs right after the last block of the arm before it.
	for i, inst := range p.Instances {
		if inst.Type == "deploy" {
			prev := p.Instances[i-1]
			if prev.Arm == "" || !strings.HasSuffix(prev.Key, "/c10/r19") {
				t.Errorf("%s runs after %s, want after the previous arm's last block", inst.Addr, prev.Addr)
			}
		}
	}
	if last := p.Instances[len(p.Instances)-1].Addr; last != `block.primary["a49/c10/r19"]` {
		t.Errorf("last instance %s, want the last block of the last arm", last)
	}
}

// BenchmarkContextWithOutputs builds the context the engine evaluates a step in,
// with a step's outputs known, on a 1 MB lane campaign (about 5,000 targets and
// workloads and 12,000 instances): the engine builds one whenever outputs changed.
func BenchmarkContextWithOutputs(b *testing.B) {
	path, _, want := laneCampaign(b, 1<<20)
	p := mustLoad(b, path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
	if len(p.Instances) != want {
		b.Fatalf("%d instances, want %d", len(p.Instances), want)
	}
	outputs := plans.Outputs{"exec.oracle0": cty.EmptyObjectVal}
	for b.Loop() {
		if _, diags := p.Context(outputs); diags.HasErrors() {
			b.Fatal(diags.Error())
		}
	}
}
