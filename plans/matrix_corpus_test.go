package plans_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

const corpusCampaign = `
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "resettable" {
  endpoint    = "http://127.0.0.1:8000"
  cache_reset = "/reset_prefix_cache"
}
target "plain" {
  endpoint = "http://127.0.0.1:8000"
}
workload "short" {
  corpus_seed = 1
}
workload "long" {
  corpus_seed     = 2
  nominal_context = 32768
}
workload "cold" {
  fresh_prefixes = true
}
step "block" "pilot" {
  for_each    = { c1 = 1 }
  target      = target.plain
  workload    = workload.short
  concurrency = each.value
  requests    = 16
  phase       = "pilot"
}
matrix "primary" {
  workload    = { c1 = workload.short, "4" = workload.long }
  corpus_seed = { c1 = 4342, c4 = 4642 }
  concurrency = [1, 4]
  repetitions = 2
  priming     = true
  requests    = 8
  arm "a" {
    target      = target.resettable
    reset_cache = true
  }
  arm "b" {
    target = target.plain
  }
}
matrix "lane" {
  workload     = workload.cold
  concurrency  = [1]
  repetitions  = 2
  requests     = 8
  expect_cache = "cold"
  arm "a" {
    target      = target.resettable
    reset_cache = true
  }
}
`

// TestMatrixCorpusPerCell expands the corpus protocol: each cell takes its own
// workload and corpus seed, the first block of each cell of a resetting arm resets,
// measured repetitions are primed by the priming block (or by the first repetition
// when there is none), and the phase reaches the block's configuration.
func TestMatrixCorpusPerCell(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(corpusCampaign), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, path, plans.Options{})
	type row struct {
		Workload string
		Seed     string
		Phase    string
		Primed   string
		Reset    string
		Expect   string
	}
	str := func(v cty.Value) string {
		switch {
		case v.IsNull():
			return "null"
		case v.Type() == cty.String:
			return v.AsString()
		case v.Type() == cty.Bool:
			if v.True() {
				return "true"
			}
			return "false"
		case v.Type() == cty.Number:
			return v.AsBigFloat().Text('f', -1)
		}
		return v.GoString()
	}
	got := map[string]row{}
	for _, inst := range p.Instances {
		if inst.Type != "block" {
			continue
		}
		c := inst.Config()
		got[inst.Addr] = row{
			Workload: str(c.GetAttr("workload").GetAttr("name")), Seed: str(c.GetAttr("corpus_seed")),
			Phase: str(c.GetAttr("phase")), Primed: str(c.GetAttr("primed")),
			Reset: str(c.GetAttr("reset_cache")), Expect: str(c.GetAttr("expect_cache")),
		}
	}
	want := map[string]row{
		`block.pilot["c1"]`:           {"short", "null", "pilot", "null", "null", "null"},
		`block.primary["a/c1/prime"]`: {"short", "4342", "priming", "false", "true", "null"},
		`block.primary["a/c1/r1"]`:    {"short", "4342", "measured", "true", "false", "null"},
		`block.primary["a/c1/r2"]`:    {"short", "4342", "measured", "true", "false", "null"},
		`block.primary["a/c4/prime"]`: {"long", "4642", "priming", "false", "true", "null"},
		`block.primary["a/c4/r1"]`:    {"long", "4642", "measured", "true", "false", "null"},
		`block.primary["a/c4/r2"]`:    {"long", "4642", "measured", "true", "false", "null"},
		`block.primary["b/c1/prime"]`: {"short", "4342", "priming", "false", "false", "null"},
		`block.primary["b/c1/r1"]`:    {"short", "4342", "measured", "true", "false", "null"},
		`block.primary["b/c1/r2"]`:    {"short", "4342", "measured", "true", "false", "null"},
		`block.primary["b/c4/prime"]`: {"long", "4642", "priming", "false", "false", "null"},
		`block.primary["b/c4/r1"]`:    {"long", "4642", "measured", "true", "false", "null"},
		`block.primary["b/c4/r2"]`:    {"long", "4642", "measured", "true", "false", "null"},
		`block.lane["a/c1/r1"]`:       {"cold", "null", "measured", "false", "true", "cold"},
		`block.lane["a/c1/r2"]`:       {"cold", "null", "measured", "true", "false", "cold"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("block configurations (-want +got):\n%s", diff)
	}
}

// TestMatrixAgents: a matrix's agents reach every block it expands, in order.
func TestMatrixAgents(t *testing.T) {
	src := strings.Replace(corpusCampaign, "  expect_cache = \"cold\"\n", "  expect_cache = \"cold\"\n  agents       = [\"tcp://10.0.0.2:7070\", \"tcp://10.0.0.3:7070\"]\n", 1)
	path := filepath.Join(t.TempDir(), "c.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	p := mustLoad(t, path, plans.Options{})
	n := 0
	for _, inst := range p.Instances {
		if inst.Type != "block" {
			continue
		}
		a := inst.Config().GetAttr("agents")
		want := inst.Name == "lane"
		if a.IsNull() == want {
			t.Fatalf("%s: agents %#v", inst.Addr, a)
		}
		if want {
			n++
			if got := a.Index(cty.NumberIntVal(1)).AsString(); got != "tcp://10.0.0.3:7070" {
				t.Fatalf("%s: second agent %q", inst.Addr, got)
			}
		}
	}
	if n != 2 {
		t.Fatalf("%d blocks of lane carry agents; want 2", n)
	}
}
