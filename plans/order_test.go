package plans_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
)

const orderCampaign = `campaign "o" {
  outage {
    budget  = "60m"
    reserve = "10m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}
step "deploy" "incumbent" {
  target = target.incumbent
}
step "deploy" "candidate" {
  target = target.candidate
  outage = "begin"
}
matrix "primary" {
  workload    = workload.w
  concurrency = [1]
  repetitions = 4
  priming     = true
  requests    = 4
  ORDER
  arm "a" {
    target = target.incumbent
    setup  = [step.deploy.incumbent]
  }
  arm "b" {
    target = target.candidate
    setup  = [step.deploy.candidate]
  }
}
step "restore" "incumbent" {
  target = target.incumbent
  always = true
  outage = "end"
}
`

// runOf is the run order of the matrix's blocks and the swap deploys, without
// the setup steps' originals.
func runOf(p *plans.Plan) []string {
	var out []string
	for _, inst := range p.Instances {
		if inst.Type == "block" || strings.Contains(inst.Name, "_swap") {
			out = append(out, inst.Addr)
		}
	}
	return out
}

func TestMatrixOrder(t *testing.T) {
	load := func(order string) *plans.Plan {
		return mustLoad(t, writeCampaign(t, strings.Replace(orderCampaign, "ORDER", order, 1)), plans.Options{})
	}
	// Alternate: AB in odd repetitions, BA in even ones; the priming blocks come
	// with each arm's first run; a swap deploys the target again.
	alt := load(`order = "alternate"`)
	want := []string{
		`block.primary["a/c1/prime"]`, `block.primary["a/c1/r1"]`, `block.primary["b/c1/prime"]`, `block.primary["b/c1/r1"]`,
		`block.primary["b/c1/r2"]`, `deploy.incumbent_swap["primary/r2/a"]`, `block.primary["a/c1/r2"]`,
		`block.primary["a/c1/r3"]`, `deploy.candidate_swap["primary/r3/b"]`, `block.primary["b/c1/r3"]`,
		`block.primary["b/c1/r4"]`, `deploy.incumbent_swap["primary/r4/a"]`, `block.primary["a/c1/r4"]`,
	}
	if diff := cmp.Diff(want, runOf(alt)); diff != "" {
		t.Fatalf("alternate run order (-want +got):\n%s", diff)
	}
	mo := alt.Matrices[0].Ordering
	if mo.Swaps != 4 || len(mo.Deploys) != 3 {
		t.Errorf("alternate: %d swaps, %d deploys; want 4 and 3", mo.Swaps, len(mo.Deploys))
	}
	// The chain: a segment's first block waits for the previous segment whatever
	// its outcome, through its swap deploy or directly.
	swap, _ := alt.Instance(`deploy.incumbent_swap["primary/r2/a"]`)
	if swap.Meta.Outage != "" || !contains(swap.After, `block.primary["b/c1/r2"]`) {
		t.Errorf("swap deploy: outage %q, after %v", swap.Meta.Outage, swap.After)
	}
	b2, _ := alt.Instance(`block.primary["b/c1/r2"]`)
	if !contains(b2.After, `block.primary["b/c1/r1"]`) {
		t.Errorf("b r2 starts after %v, want b r1 (the previous segment)", b2.After)
	}
	// Randomized: the same seed gives the same order, every repetition runs each
	// arm once, and an undeclared seed is derived and recorded.
	r1, r2 := load(`order = "randomized"
  order_seed = 42`), load(`order = "randomized"
  order_seed = 42`)
	if diff := cmp.Diff(runOf(r1), runOf(r2)); diff != "" {
		t.Fatalf("one seed, two orders:\n%s", diff)
	}
	for _, seq := range r1.Matrices[0].Ordering.Sequences {
		if len(seq) != 2 || seq[0] == seq[1] {
			t.Errorf("repetition sequence %v is not a permutation of the arms", seq)
		}
	}
	derived := load(`order = "randomized"`)
	if o := derived.Matrices[0].Ordering; !o.SeedDerived || o.Seed == 0 || !strings.Contains(string(mustJSON(t, derived)), `"seed_derived":true`) {
		t.Errorf("derived seed: %+v", o)
	}
	// The derived seed comes from the matrix name: the same on every load, another
	// for another name.
	if again := load(`order = "randomized"`); again.Matrices[0].Ordering.Seed != derived.Matrices[0].Ordering.Seed {
		t.Errorf("derived seeds differ between loads: %d, %d", derived.Matrices[0].Ordering.Seed, again.Matrices[0].Ordering.Seed)
	}
	renamed := mustLoad(t, writeCampaign(t, strings.NewReplacer("ORDER", `order = "randomized"`, `matrix "primary"`, `matrix "secondary"`).Replace(orderCampaign)), plans.Options{})
	if o := renamed.Matrices[0].Ordering; !o.SeedDerived || o.Seed == derived.Matrices[0].Ordering.Seed {
		t.Errorf("matrix secondary derives seed %d, primary %d: want another seed for another name", o.Seed, derived.Matrices[0].Ordering.Seed)
	}
	// The declared order is unchanged and records nothing.
	decl := load(``)
	if strings.Contains(string(mustJSON(t, decl)), `"orders"`) || decl.Matrices[0].Ordering.Swaps != 1 {
		t.Errorf("declared order: swaps %d, canonical carries orders: %v", decl.Matrices[0].Ordering.Swaps, strings.Contains(string(mustJSON(t, decl)), `"orders"`))
	}
}

// TestMatrixOrderSharedSetup: an arm without setup steps, on a target another arm
// deploys, has that arm's setup run again when a swap brings it back.
func TestMatrixOrderSharedSetup(t *testing.T) {
	src := strings.Replace(orderCampaign, "ORDER", `order = "alternate"`, 1)
	src = strings.Replace(src, "  arm \"b\" {", "  arm \"c\" {\n    target = target.candidate\n  }\n  arm \"b\" {", 1)
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	// r1: a, c, b (c runs on the candidate, which nothing deployed yet: b's deploy
	// runs again for it); r2: c, a, b.
	if got := p.Matrices[0].Ordering.Sequences[1]; !cmp.Equal(got, []string{"c", "a", "b"}) {
		t.Fatalf("r2 = %v, want [c a b]", got)
	}
	if _, ok := p.Instance(`deploy.candidate_swap["primary/r1/c"]`); !ok {
		t.Fatalf("no swap deploy for c in r1: %v", runOf(p))
	}
}

// TestOrderFitsOwnBlocksOnly: a campaign may defer an optional lane by design; an
// order is refused only when the budget cannot hold its own blocks and deploys.
func TestOrderFitsOwnBlocksOnly(t *testing.T) {
	lane := `matrix "lane" {
  workload    = workload.w
  concurrency = [1]
  requests    = 4
  timeout     = "40m"
  arm "b" {
    target = target.candidate
  }
}
step "restore" "incumbent" {`
	src := strings.NewReplacer("ORDER", "order = \"alternate\"\n  timeout = \"2m\"", `step "restore" "incumbent" {`, lane,
		"  target = target.candidate\n  outage = \"begin\"", "  target = target.candidate\n  outage = \"begin\"\n  timeout = \"3m\"",
		"step \"deploy\" \"incumbent\" {\n  target = target.incumbent", "step \"deploy\" \"incumbent\" {\n  target = target.incumbent\n  timeout = \"3m\"").Replace(orderCampaign)
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	if f := p.Forecast(); len(f.Deferred) != 1 || f.Deferred[0].Addr != `block.lane["b/c1/r1"]` {
		t.Fatalf("the lane should be the only deferred step: %+v", f.Deferred)
	}
	// With a budget that cannot hold the order's own deploys, it is refused.
	tight := strings.Replace(src, `budget  = "60m"`, `budget  = "35m"`, 1)
	_, diags := load(t, writeCampaign(t, tight), plans.Options{})
	if !diags.HasErrors() || !strings.Contains(diags.Error(), "Order does not fit the outage") {
		t.Fatalf("want the order refused, got %s", diags.Error())
	}
}
