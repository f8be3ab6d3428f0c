package nsys

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/zclconf/go-cty/cty"
)

const configCampaign = `
campaign "c" {}

host "node" {
  runtime = "sim"
}

target "t" {
  host      = host.node
  container = "c"
  profile   = "flare"
  endpoint  = "http://127.0.0.1:1"
}

workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 1
  nominal_context = 512
}

step "block" "b" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.t
  workload    = workload.w
  concurrency = each.value
  requests    = 4
}

step "nsys" "n" {
  command  = ["sleep", "1"]
  duration = "1s"
  %s
}
`

// attrLine is the line of the campaign where the attributes under test go.
var attrLine = strings.Count(configCampaign[:strings.Index(configCampaign, "%s")], "\n") + 1

func loadConfig(t *testing.T, attrs string) (*plans.Plan, hcl.Diagnostics) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "campaign.hcl")
	if err := os.WriteFile(path, []byte(strings.Replace(configCampaign, "%s", attrs, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: plans.StepTypes{"nsys": Step{}, "block": block.Step{}}, Env: []string{}})
	return p, diags
}

// The report's attributes are checked when the plan is loaded: each problem is a
// diagnostic at the attribute's line.
func TestReportAttributesCheckedAtLoad(t *testing.T) {
	cases := map[string]struct {
		attrs, detail string
	}{
		"bad pattern":            {`modules = { moe = ["W4A16(Fused"] }`, `pattern "W4A16(Fused"`},
		"module without pattern": {`modules = { moe = [] }`, `module "moe" has no pattern`},
		"negative device":        {`rank_devices = [0, -1]`, "element 1 (-1) is not a device number"},
		"device twice":           {`rank_devices = [1, 1]`, "device 1 is listed twice"},
		"control is a string":    {`control = "block.b"`, "control is a string, not a block step's outputs"},
		"control is a target":    {`control = target.t`, "control is not a block step"},
		"control names several":  {`control = step.block.b`, "control is not a block step"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, diags := loadConfig(t, tc.attrs)
			if !diags.HasErrors() {
				t.Fatal("loaded without a diagnostic")
			}
			found := false
			for _, d := range diags {
				if strings.Contains(d.Detail, tc.detail) {
					found = true
					if d.Subject == nil || d.Subject.Start.Line != attrLine {
						t.Errorf("diagnostic %q points at %v, not at the attribute (line %d)", d.Detail, d.Subject, attrLine)
					}
				}
			}
			if !found {
				t.Errorf("no diagnostic says %q: %v", tc.detail, diags)
			}
		})
	}
}

// A valid control names one block; the step records its address in capture.json,
// where the report finds it.
func TestControlRecordedInCapture(t *testing.T) {
	p, diags := loadConfig(t, "control      = step.block.b[\"c4\"]\n  modules      = { moe = [\"Moe\"] }\n  rank_devices = [0, 1]")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	inst, ok := p.Instance("nsys.n")
	if !ok {
		t.Fatal("no nsys.n")
	}
	if got := ControlAddr(inst.Config()); got != `block.b["c4"]` {
		t.Fatalf("control address %q", got)
	}
	found := false
	for _, d := range inst.DependsOn {
		found = found || d == `block.b["c4"]`
	}
	if !found {
		t.Errorf("nsys.n depends on %v: naming the control orders the capture after it", inst.DependsOn)
	}
	cfg := map[string]any{}
	b, _ := json.Marshal(plans.CanonicalValue(inst.Config()))
	_ = json.Unmarshal(b, &cfg)
	m, err := MappingFromPlan(cfg)
	if err != nil || len(m.Modules) != 1 || m.Modules[0].Name != "moe" || !cmp.Equal(m.RankDevices, []int{0, 1}) {
		t.Errorf("mapping from plan.json: %+v %v", m, err)
	}

	bin := t.TempDir()
	writeScript(t, bin, "nsys", fakeNsys)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKE_LOG", filepath.Join(t.TempDir(), "argv.log"))
	sc := stepContext(t, "host", cty.NilVal)
	sc.Instance = inst
	if res := (Step{}).Run(context.Background(), sc); res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	var rec captureRecord
	raw, _ := os.ReadFile(sc.Path("capture.json"))
	if err := json.Unmarshal(raw, &rec); err != nil || rec.Control != `block.b["c4"]` {
		t.Errorf("capture.json control %q (%v)", rec.Control, err)
	}
}
