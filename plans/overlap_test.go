package plans_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
)

func TestClash(t *testing.T) {
	cases := map[string]struct {
		a, b  plans.Claim
		clash bool
		why   string
	}{
		"no uses runs alone":                    {plans.Claim{Addr: "exec.a"}, plans.Claim{Addr: "block.b", Uses: []string{"gpu"}}, true, "exec.a declares no uses, so it runs alone"},
		"shared use":                            {plans.Claim{Addr: "a", Uses: []string{"gpu", "net"}}, plans.Claim{Addr: "b", Uses: []string{"net"}}, true, "both use net"},
		"disjoint uses":                         {plans.Claim{Addr: "a", Uses: []string{"trace"}}, plans.Claim{Addr: "b", Uses: []string{"gpu"}}, false, "disjoint uses (trace; gpu)"},
		"capture during a block":                {plans.Claim{Addr: "trace.t", Uses: []string{"gpu"}, During: "block.b"}, plans.Claim{Addr: "block.b", Uses: []string{"gpu"}}, false, "a capture runs during its block"},
		"capture without uses is not exclusive": {plans.Claim{Addr: "trace.t", During: "block.b"}, plans.Claim{Addr: "block.c", Uses: []string{"gpu"}}, false, "disjoint uses (; gpu)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for _, pair := range [][2]plans.Claim{{tc.a, tc.b}, {tc.b, tc.a}} {
				clash, why := plans.Clash(pair[0], pair[1])
				if clash != tc.clash {
					t.Errorf("Clash(%s, %s) = %v, want %v", pair[0].Addr, pair[1].Addr, clash, tc.clash)
				}
				if pair[0].Addr == tc.a.Addr && why != tc.why {
					t.Errorf("why = %q, want %q", why, tc.why)
				}
			}
		})
	}
}

const overlapCampaign = `campaign "o" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "exec" "setup" {
  command = ["true"]
}
step "block" "a" {
  target      = target.t
  workload    = workload.w
  concurrency = 1
  requests    = 1
  uses        = ["gpu"]
  depends_on  = [step.exec.setup]
}
step "block" "b" {
  target      = target.t
  workload    = workload.w
  concurrency = 1
  requests    = 1
  uses        = ["gpu"]
  depends_on  = [step.exec.setup]
}
step "exec" "watch" {
  command    = ["true"]
  uses       = ["net"]
  depends_on = [step.exec.setup]
}
step "exec" "after_a" {
  command    = ["true"]
  uses       = ["disk"]
  depends_on = [step.block.a]
}
`

// TestOverlaps: steps overlap only when no dependency orders them and their uses
// are disjoint; a step without uses never overlaps anything.
func TestOverlaps(t *testing.T) {
	p := mustLoad(t, writeCampaign(t, overlapCampaign), plans.Options{})
	got, n := p.Overlaps(10)
	var pairs []string
	for _, o := range got {
		pairs = append(pairs, o.A+" | "+o.B+" | "+o.Why)
	}
	want := []string{
		"block.a | exec.watch | disjoint uses (gpu; net)",
		"block.b | exec.watch | disjoint uses (gpu; net)",
		"block.b | exec.after_a | disjoint uses (gpu; disk)",
		"exec.watch | exec.after_a | disjoint uses (net; disk)",
	}
	if diff := cmp.Diff(sortedCopy(want), sortedCopy(pairs)); diff != "" || n != len(want) {
		t.Fatalf("overlaps (-want +got):\n%s (n = %d)", diff, n)
	}
	if got, n := p.Overlaps(1); len(got) != 1 || n != len(want) {
		t.Errorf("with limit 1: %d listed, %d counted; want 1 and %d", len(got), n, len(want))
	}
	// The same blocks all on one use: nothing may overlap.
	one := mustLoad(t, writeCampaign(t, strings.NewReplacer(`["net"]`, `["gpu"]`, `["disk"]`, `["gpu"]`).Replace(overlapCampaign)), plans.Options{})
	if got, n := one.Overlaps(10); n != 0 || len(got) != 0 {
		t.Errorf("one shared use: %d overlaps, want none", n)
	}
}

func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// TestOverlapsDuring: a capture runs only while its block runs, so it overlaps its
// block and what may overlap that block, never a step its block clashes with.
func TestOverlapsDuring(t *testing.T) {
	src := overlapCampaign + `step "exec" "cap" {
  command    = ["true"]
  uses       = ["trace"]
  during     = step.block.a
}
`
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	got, _ := p.Overlaps(100)
	var with []string
	for _, o := range got {
		switch "exec.cap" {
		case o.A:
			with = append(with, o.B)
		case o.B:
			with = append(with, o.A)
		}
	}
	if diff := cmp.Diff([]string{"block.a", "exec.watch"}, sortedCopy(with)); diff != "" {
		t.Fatalf("exec.cap overlaps (-want +got):\n%s", diff)
	}
}
