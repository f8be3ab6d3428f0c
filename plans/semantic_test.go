package plans_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
)

// semanticBase hides expressions behind unknown values (step outputs), which is
// where the plan hash has to look at the expression rather than its value.
const semanticBase = `campaign "sem" {}

variable "scale" {
  type    = number
  default = 2
}

host "node" {
  gpus = "sim"
}

step "exec" "build" {
  command = ["docker", "build", "."]
}

target "incumbent" {
  host     = host.node
  endpoint = "http://127.0.0.1:8000"
}

target "candidate" {
  host     = host.node
  endpoint = "http://127.0.0.1:8001"
  image    = "flare:${step.exec.build.exit_code}"
}

workload "w" {
  max_tokens = 256
}

step "block" "pilot" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.incumbent
  workload    = workload.w
  concurrency = each.value
  requests    = 8
  phase       = "pilot"
}

step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(48, b.requests * var.scale) # capped
  }
}

step "freeze" "labels" {
  values = { b = step.exec.build.exit_code, a = "one" }
}

step "freeze" "per" {
  for_each = { a = 1, b = 2 }
  values   = step.exec.build.exit_code * each.value
}

step "exec" "announce" {
  command = ["echo", "built ${step.exec.build.exit_code}\n"]
}

matrix "primary" {
  workload    = workload.w
  concurrency = [1, 4]
  repetitions = 2
  requests    = step.freeze.counts.values

  arm "incumbent_before" {
    target = target.incumbent
  }
  arm "candidate" {
    target = target.candidate
    setup  = [step.exec.build]
  }
}
`

// TestSemanticDiff: edits that keep the meaning leave the plan hash as it was and
// show no change; edits that change it show exactly on the instances they touch,
// with the expression named. Adding arms, cells or repetitions touches no existing
// instance.
func TestSemanticDiff(t *testing.T) {
	type edit struct{ from, to string }
	cases := map[string]struct {
		edits   []edit
		added   int
		changed map[string][]string // instance -> changed attribute paths
	}{
		"comment edited inside an unknown expression": {edits: []edit{{"# capped", "# capped at 48 requests, see review"}}},
		"comment added inside a matrix":               {edits: []edit{{"  repetitions = 2\n", "  # two is enough\n\n  repetitions = 2 /* per cell */\n"}}},
		"layout of a for expression":                  {edits: []edit{{"k => min(48, b.requests * var.scale) # capped", "k => min(\n      48,\n      b.requests * var.scale,\n    )"}}},
		"redundant parentheses":                       {edits: []edit{{"b.requests * var.scale", "(b.requests * (var.scale))"}}},
		"lone interpolation":                          {edits: []edit{{"requests    = step.freeze.counts.values", `requests    = "${step.freeze.counts.values}"`}}},
		"object item order and quoted keys":           {edits: []edit{{`{ b = step.exec.build.exit_code, a = "one" }`, "{\n    \"a\" = \"one\"\n    b     = step.exec.build.exit_code\n  }"}}},
		"heredoc instead of a quoted string":          {edits: []edit{{`"built ${step.exec.build.exit_code}\n"`, "<<EOT\nbuilt ${step.exec.build.exit_code}\nEOT\n"}}},
		"a known value written another way":           {edits: []edit{{"requests    = 8", "requests    = 4 + 4"}}},
		"list across lines with a trailing comma":     {edits: []edit{{"setup  = [step.exec.build]", "setup = [\n      step.exec.build,\n    ]"}}},

		"cap changed behind an unknown": {
			edits:   []edit{{"min(48,", "min(47,"}},
			changed: map[string][]string{"freeze.counts": {"source.values"}},
		},
		"variable feeding an unknown expression": {
			edits:   []edit{{"default = 2", "default = 3"}},
			changed: map[string][]string{"freeze.counts": {"source.var.scale"}},
		},
		"a target's unknown attribute changed": {
			edits: []edit{{`"flare:${`, `"flare-x:${`}},
			changed: map[string][]string{
				`block.primary["candidate/c1/r1"]`: {"source.target.candidate.image"}, `block.primary["candidate/c1/r2"]`: {"source.target.candidate.image"},
				`block.primary["candidate/c4/r1"]`: {"source.target.candidate.image"}, `block.primary["candidate/c4/r2"]`: {"source.target.candidate.image"},
			},
		},
		"each.value of one instance, read only behind an unknown": {
			edits:   []edit{{"{ a = 1, b = 2 }", "{ a = 1, b = 3 }"}},
			changed: map[string][]string{`freeze.per["b"]`: {"source.each"}},
		},
		"an arm added": {
			edits: []edit{{"    setup  = [step.exec.build]\n  }\n", "    setup  = [step.exec.build]\n  }\n  arm \"incumbent_after\" {\n    target = target.incumbent\n  }\n"}},
			added: 4,
		},
		// The candidate's setup step waits for every block of the arm before it, so
		// it gains the added blocks as dependencies and nothing else.
		"a cell added": {
			edits: []edit{{"concurrency = [1, 4]", "concurrency = [1, 4, 8]"}}, added: 4,
			changed: map[string][]string{"exec.build": {"after"}},
		},
		"a repetition added": {
			edits: []edit{{"repetitions = 2", "repetitions = 3"}}, added: 4,
			changed: map[string][]string{"exec.build": {"after"}},
		},
	}
	base := mustLoad(t, writeCampaign(t, semanticBase), plans.Options{})
	baseJSON, baseHash := mustJSON(t, base), mustHash(t, base)
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			src := semanticBase
			for _, e := range tc.edits {
				if !strings.Contains(src, e.from) {
					t.Fatalf("edit %q does not apply", e.from)
				}
				src = strings.Replace(src, e.from, e.to, 1)
			}
			p := mustLoad(t, writeCampaign(t, src), plans.Options{})
			d, err := plans.DiffPlans(baseJSON, mustJSON(t, p))
			if err != nil {
				t.Fatal(err)
			}
			if tc.added == 0 && len(tc.changed) == 0 {
				if !d.Empty() || mustHash(t, p) != baseHash {
					t.Fatalf("the meaning did not change, but the diff says %s: %+v", d.Summary(), d)
				}
				return
			}
			added, changed := 0, map[string][]string{}
			for _, c := range d.Changes {
				switch c.Kind {
				case "added":
					added++
				case "changed":
					for _, a := range c.Attrs {
						changed[c.Addr] = append(changed[c.Addr], a.Path)
					}
					sort.Strings(changed[c.Addr])
				default:
					t.Errorf("%s %s", c.Kind, c.Addr)
				}
			}
			if added != tc.added {
				t.Errorf("%d instances added, want %d", added, tc.added)
			}
			want := tc.changed
			if want == nil {
				want = map[string][]string{}
			}
			if diff := cmp.Diff(want, changed); diff != "" {
				t.Errorf("changed instances (-want +got):\n%s", diff)
			}
			if len(d.Campaign) != 0 {
				t.Errorf("campaign changes %+v", d.Campaign)
			}
		})
	}
}

// TestSourceHoldsNoSecretText: a secret written into an unknown expression reaches
// the plan only as a digest.
func TestSourceHoldsNoSecretText(t *testing.T) {
	src := strings.Replace(semanticBase, `"flare:${step.exec.build.exit_code}"`, `"flare:${step.exec.build.exit_code}:sk-literal-0451"`, 1)
	p := mustLoad(t, writeCampaign(t, src), plans.Options{})
	if b := mustJSON(t, p); strings.Contains(string(b), "sk-literal-0451") {
		t.Fatal("the canonical plan holds the text of an expression")
	}
}
