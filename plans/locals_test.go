package plans_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

const localsBase = `campaign "l" {
  outage {
    budget  = local.window.budget
    reserve = var.reserve
  }
}

variable "reserve" {
  default = "20m"
}
variable "scale" {
  default = 2
}

locals {
  requests = var.scale * 4
  window   = { budget = "90m" }
}

locals {
  concs = [1, local.requests / 2]
  port  = 8000 + var.scale
}

target "incumbent" {
  endpoint = "http://127.0.0.1:${local.port}"
}
workload "w" {}

step "deploy" "incumbent" {
  target = target.incumbent
  outage = "begin"
}

step "freeze" "counts" {
  values = { c1 = 3, c4 = 5 }
}

locals {
  frozen = step.freeze.counts.values
}

matrix "primary" {
  workload    = workload.w
  concurrency = local.concs
  requests    = local.frozen
  arm "a" {
    target = target.incumbent
  }
}

step "block" "alone" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = local.requests
}

step "restore" "incumbent" {
  target = target.incumbent
  always = true
  outage = "end"
}
`

// TestLocals: locals (several blocks) read variables, other locals and step
// outputs, and are read wherever a variable may be: data blocks, matrix and step
// attributes, and the campaign's outage. What a local names becomes a dependency of
// what reads it.
func TestLocals(t *testing.T) {
	p := mustLoad(t, writeCampaign(t, localsBase), plans.Options{})
	if o := p.Campaign.Outage; o == nil || o.Budget != 90*time.Minute || o.Reserve != 20*time.Minute {
		t.Fatalf("outage = %+v, want budget 90m from a local and reserve 20m from a variable", o)
	}
	alone, ok := p.Instance("block.alone")
	if !ok {
		t.Fatal("no block.alone")
	}
	if got := alone.Config().GetAttr("requests"); !got.RawEquals(cty.NumberIntVal(8)) {
		t.Errorf("block.alone requests = %#v, want 8 (var.scale * 4 through a local)", got)
	}
	if got := alone.Config().GetAttr("target").GetAttr("endpoint"); got.AsString() != "http://127.0.0.1:8002" {
		t.Errorf("target endpoint = %s, want the port from a local", got.AsString())
	}
	// local.concs = [1, 4]: the matrix has both cells, and its blocks wait for the
	// freeze step that local.frozen names.
	for _, addr := range []string{`block.primary["a/c1/r1"]`, `block.primary["a/c4/r1"]`} {
		inst, ok := p.Instance(addr)
		if !ok {
			t.Fatalf("no %s", addr)
		}
		if !contains(inst.DependsOn, "freeze.counts") {
			t.Errorf("%s depends on %v, want freeze.counts (through local.frozen)", addr, inst.DependsOn)
		}
	}
	// A variable given on the command line flows through the locals into the
	// outage and the plan hash.
	q := mustLoad(t, writeCampaign(t, localsBase), plans.Options{Vars: []string{"reserve=30m", "scale=3"}})
	if q.Campaign.Outage.Reserve != 30*time.Minute {
		t.Errorf("reserve = %s, want 30m from --var", q.Campaign.Outage.Reserve)
	}
	var doc struct {
		Campaign struct {
			Outage struct {
				ReserveS float64 `json:"reserve_s"`
			} `json:"outage"`
		} `json:"campaign"`
	}
	if err := json.Unmarshal(mustJSON(t, q), &doc); err != nil || doc.Campaign.Outage.ReserveS != 1800 {
		t.Errorf("canonical reserve_s = %v (%v), want 1800", doc.Campaign.Outage.ReserveS, err)
	}
	if mustHash(t, p) == mustHash(t, q) {
		t.Error("different variable values through locals must change the plan hash")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestLocalsDiagnostics(t *testing.T) {
	cases := map[string]struct {
		from, to string
		summary  string
		detail   string
		at       string
	}{
		"undeclared local": {`requests    = local.requests`, `requests    = local.request`,
			"Reference to undeclared local value", `There is no local value named "request". Did you mean "requests"?`, "local.request\n"},
		"duplicate local": {`  port  = 8000 + var.scale`, "  port  = 8000 + var.scale\n  requests = 3",
			"Duplicate local value", "local.requests was already declared at", `requests = 3`},
		"cycle": {`  requests = var.scale * 4`, `  requests = local.concs[0]`, "Dependency cycle", "local.requests refers to local.concs", `local.concs[0]`},
		"outage from a step": {`budget  = local.window.budget`, `budget  = step.freeze.counts.values.c1`,
			"Value must be known at plan time", "The outage budget bounds the whole campaign", `step.freeze.counts.values.c1`},
		"outage variable misspelt": {`reserve = var.reserve`, `reserve = var.reserv`,
			"Reference to undeclared variable", `Did you mean "reserve"?`, `var.reserv`},
		"outage not a duration": {`window   = { budget = "90m" }`, `window   = { budget = "90 minutes" }`,
			"Invalid duration", "budget:", `local.window.budget`},
		"outage reserve over budget": {`default = "20m"`, `default = "2h"`,
			"Outage reserve exceeds budget", "The reserve (2h0m0s) must be smaller than the budget (1h30m0s)", `var.reserve`},
	}
	line := func(src, s string) int { return strings.Count(src[:strings.Index(src, s)], "\n") + 1 }
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := strings.Replace(localsBase, tc.from, tc.to, 1)
			if src == localsBase {
				t.Fatal("replacement did not apply")
			}
			_, diags := load(t, writeCampaign(t, src), plans.Options{})
			errs := errorsOf(diags)
			if len(errs) == 0 {
				t.Fatal("want an error, got none")
			}
			e := errs[0]
			if e.Summary != tc.summary || !strings.Contains(e.Detail, tc.detail) {
				t.Fatalf("got %q: %s\nwant %q containing %q", e.Summary, e.Detail, tc.summary, tc.detail)
			}
			if want := line(src, tc.at); e.Subject == nil || e.Subject.Start.Line != want {
				t.Fatalf("diagnostic at %v, want line %d (%s)", e.Subject, want, tc.at)
			}
		})
	}
}

// TestLocalSource: a local whose value waits for a step hides its expression from
// the configuration, so its canonical expression is part of the source of what
// reads it: editing it is a change to those instances, and editing anything else is
// not.
func TestLocalSource(t *testing.T) {
	source := func(src string) string {
		p := mustLoad(t, writeCampaign(t, src), plans.Options{})
		var doc struct {
			Instances []struct {
				Addr   string            `json:"addr"`
				Source map[string]string `json:"source"`
			} `json:"instances"`
		}
		if err := json.Unmarshal(mustJSON(t, p), &doc); err != nil {
			t.Fatal(err)
		}
		for _, in := range doc.Instances {
			if in.Addr == `block.primary["a/c4/r1"]` {
				b, _ := json.Marshal(in.Source)
				return string(b)
			}
		}
		t.Fatal("no block.primary[\"a/c4/r1\"]")
		return ""
	}
	base := source(localsBase)
	if !strings.Contains(base, `"local.frozen"`) {
		t.Fatalf("source %s does not carry local.frozen", base)
	}
	if got := source(strings.Replace(localsBase, "frozen = step.freeze.counts.values", "frozen = step.freeze.counts.values # the counts", 1)); got != base {
		t.Errorf("a comment changed the source:\n%s\n%s", base, got)
	}
	if got := source(strings.Replace(localsBase, "c1 = 3, c4 = 5", "c1 = 3, c4 = 6", 1)); got != base {
		t.Errorf("an edit the block does not read through the local changed its source")
	}
	if got := source(strings.Replace(localsBase, "frozen = step.freeze.counts.values", "frozen = { for k, v in step.freeze.counts.values : k => v * 2 }", 1)); got == base {
		t.Error("editing the local the block reads did not change its source")
	}
}
