package plans_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
)

// chainedCaptures is seed 001's "three short captures per concurrency, each under
// its own load block" in two step blocks: count repeats each for_each key, and
// sequential puts the instances in one chain.
const chainedCaptures = `
campaign "c" {}

target "t" {
  endpoint = "http://127.0.0.1:1"
}

step "block" "short" {
  for_each    = { c1 = 1, c4 = 4 }
  count       = 3
  sequential  = true
  target      = target.t
  concurrency = each.value
  requests    = 8
  uses        = ["gpu"]
}

step "exec" "capture" {
  for_each   = { c1 = 1, c4 = 4 }
  count      = 3
  sequential = true
  command    = ["capture", each.key, "${each.value}"]
  during     = step.block.short[each.key]
  uses       = ["trace"]
}

step "exec" "alone" {
  count      = 2
  sequential = true
  command    = ["n", "${each.value}", each.key]
}

step "exec" "unordered" {
  count   = 2
  command = ["u"]
}
`

func TestCountSequential(t *testing.T) {
	p := mustLoad(t, writeCampaign(t, chainedCaptures), plans.Options{})
	byAddr := map[string]*plans.Instance{}
	for _, i := range p.Instances {
		byAddr[i.Addr] = i
	}
	keys := []string{"c1/1", "c1/2", "c1/3", "c4/1", "c4/2", "c4/3"}
	for n, k := range keys {
		blk := byAddr[`block.short["`+k+`"]`]
		capt := byAddr[`exec.capture["`+k+`"]`]
		if blk == nil || capt == nil {
			t.Fatalf("instances of key %s missing; have %v", k, addrs(p))
		}
		// Each instance starts after the previous one in key order, whatever its
		// outcome (After, not DependsOn); the first has nothing before it.
		var wantAfter, wantCaptAfter []string
		if n > 0 {
			wantAfter = []string{`block.short["` + keys[n-1] + `"]`}
			wantCaptAfter = []string{`exec.capture["` + keys[n-1] + `"]`}
		}
		if diff := cmp.Diff(wantAfter, blk.After); diff != "" {
			t.Errorf("%s After (-want +got):\n%s", blk.Addr, diff)
		}
		if diff := cmp.Diff(wantCaptAfter, capt.After); diff != "" {
			t.Errorf("%s After (-want +got):\n%s", capt.Addr, diff)
		}
		if len(blk.DependsOn) != 0 {
			t.Errorf("%s DependsOn = %v; sequential must not make a sibling's failure block the next", blk.Addr, blk.DependsOn)
		}
		// Each capture runs during its own block, with each.key its full key and
		// each.value the for_each value.
		if capt.Meta.During != blk.Addr {
			t.Errorf("%s during = %q, want %q", capt.Addr, capt.Meta.During, blk.Addr)
		}
		conc := strings.TrimPrefix(strings.Split(k, "/")[0], "c")
		if got := configStrings(t, capt); !cmp.Equal(got, []string{"capture", k, conc}) {
			t.Errorf("%s command = %v, want [capture %s %s]", capt.Addr, got, k, conc)
		}
	}
	// The run order follows the chain: c1/1, c1/2, c1/3, then c4.
	order := addrs(p)
	for n := 1; n < len(keys); n++ {
		if position(t, order, `block.short["`+keys[n-1]+`"]`) > position(t, order, `block.short["`+keys[n]+`"]`) {
			t.Errorf("block.short[%q] runs before block.short[%q]", keys[n], keys[n-1])
		}
	}
	// count alone: keys 1..N, each.value the number.
	if got := configStrings(t, byAddr[`exec.alone["2"]`]); !cmp.Equal(got, []string{"n", "2", "2"}) {
		t.Errorf(`exec.alone["2"] command = %v, want [n 2 2]`, got)
	}
	if diff := cmp.Diff([]string{`exec.alone["1"]`}, byAddr[`exec.alone["2"]`].After); diff != "" {
		t.Errorf(`exec.alone["2"] After (-want +got):\n%s`, diff)
	}
	// Without sequential, count's siblings are not ordered.
	if a := byAddr[`exec.unordered["2"]`].After; len(a) != 0 {
		t.Errorf(`exec.unordered["2"] After = %v, want none`, a)
	}
	// The chain is part of the plan: the canonical plan records it, so adding
	// sequential changes the plan hash.
	unseq := strings.Replace(chainedCaptures, "  sequential = true\n  command    = [\"capture\"", "  command    = [\"capture\"", 1)
	if unseq == chainedCaptures {
		t.Fatal("test campaign edit did not apply")
	}
	if mustHash(t, p) == mustHash(t, mustLoad(t, writeCampaign(t, unseq), plans.Options{})) {
		t.Error("removing sequential left the plan hash unchanged")
	}
}

func configStrings(t *testing.T, inst *plans.Instance) []string {
	t.Helper()
	var out []string
	for _, v := range inst.Config().GetAttr("command").AsValueSlice() {
		out = append(out, v.AsString())
	}
	return out
}

// count and sequential shape the expansion, so a bad value is a diagnostic at its
// range before anything runs.
func TestCountSequentialInvalid(t *testing.T) {
	cases := map[string]struct {
		attrs   string
		summary string
		detail  string
	}{
		"count zero":          {`count = 0`, "Invalid count", "count must be a whole number from 1 to 1000"},
		"count fraction":      {`count = 1.5`, "Invalid count", "count must be a whole number from 1 to 1000"},
		"count too large":     {`count = 5000`, "Invalid count", "count must be a whole number from 1 to 1000"},
		"count a string":      {`count = "three"`, "Invalid count", "count must be a whole number"},
		"count from a step":   {`count = step.exec.first.exit_code`, "Invalid count", "known at plan time"},
		"sequential a string": {`sequential = "yes"`, "Incorrect attribute value type", "sequential must be true or false"},
		"sequential alone":    {`sequential = true`, "Invalid sequential", "step.exec.x has one instance. Add count or for_each"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := "campaign \"c\" {}\nstep \"exec\" \"first\" {\n  command = [\"true\"]\n}\nstep \"exec\" \"x\" {\n  command = [\"true\"]\n  " + tc.attrs + "\n}\n"
			p, diags := load(t, writeCampaign(t, src), plans.Options{})
			errs := errorsOf(diags)
			if p != nil || len(errs) == 0 {
				t.Fatalf("got plan %v, errors %v; want no plan and an error", p != nil, errs)
			}
			e := errs[0]
			if e.Summary != tc.summary || !strings.Contains(e.Detail, tc.detail) {
				t.Errorf("first error %q: %q; want %q containing %q", e.Summary, e.Detail, tc.summary, tc.detail)
			}
			if e.Subject == nil || e.Subject.Start.Line != 7 {
				t.Errorf("error at %v, want line 7 (the attribute's value)", e.Subject)
			}
		})
	}
}
