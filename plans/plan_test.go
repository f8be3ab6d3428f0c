package plans_test

import (
	encjson "encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

const seedPath = "testdata/valid/seed.hcl"

func addrs(p *plans.Plan) []string {
	out := make([]string, 0, len(p.Instances))
	for _, i := range p.Instances {
		out = append(out, i.Addr)
	}
	return out
}

func position(t *testing.T, order []string, addr string) int {
	t.Helper()
	for i, a := range order {
		if a == addr {
			return i
		}
	}
	t.Fatalf("instance %s not in the plan", addr)
	return -1
}

func TestSeedRunOrder(t *testing.T) {
	p := mustLoad(t, seedPath, plans.Options{})
	order := addrs(p)

	// Matrix blocks in the run order: arms in declared (ABBA) order, then
	// concurrencies, then priming before r1..r3.
	var gotBlocks, wantBlocks []string
	for _, a := range order {
		if strings.HasPrefix(a, "block.primary[") {
			gotBlocks = append(gotBlocks, a)
		}
	}
	for _, arm := range []string{"incumbent_before", "flare_control", "flare_instrumented", "incumbent_after"} {
		for _, c := range []int{1, 4} {
			for _, k := range []string{"prime", "r1", "r2", "r3"} {
				wantBlocks = append(wantBlocks, fmt.Sprintf("block.primary[%q]", fmt.Sprintf("%s/c%d/%s", arm, c, k)))
			}
		}
	}
	if diff := cmp.Diff(wantBlocks, gotBlocks); diff != "" {
		t.Errorf("matrix run order (-want +got):\n%s", diff)
	}

	// The whole schedule: pilot, freeze, then the arms with each setup deploy
	// between the arm it follows and the arm it prepares, restore last.
	want := []string{`block.pilot["c1"]`, `block.pilot["c4"]`, "freeze.counts"}
	want = append(want, wantBlocks[0:8]...)
	want = append(want, "deploy.flare")
	want = append(want, wantBlocks[8:24]...)
	want = append(want, "deploy.incumbent_again")
	want = append(want, wantBlocks[24:32]...)
	want = append(want, "restore.incumbent")
	if diff := cmp.Diff(want, order); diff != "" {
		t.Errorf("run order (-want +got):\n%s", diff)
	}

	// The order is a topological order: every dependency comes first.
	for i, inst := range p.Instances {
		for _, d := range inst.DependsOn {
			if position(t, order, d) >= i {
				t.Errorf("%s runs at %d but depends on %s, which runs later", inst.Addr, i, d)
			}
		}
	}
	if _, err := p.Graph(); err != nil {
		t.Errorf("Graph(): %v", err)
	}
}

func TestSeedInstances(t *testing.T) {
	p := mustLoad(t, seedPath, plans.Options{})
	if got, want := len(p.Instances), 2+1+4*2*4+2+1; got != want {
		t.Errorf("len(Instances) = %d, want %d", got, want)
	}
	tests := map[string]struct {
		addr       string
		arm, cell  string
		phase      string
		rep, conc  int64
		dependsOn  []string
		timeoutSec float64
	}{
		"measured block": {
			addr: `block.primary["flare_control/c4/r2"]`, arm: "flare_control", cell: "flare_control/c4",
			phase: "measured", rep: 2, conc: 4, dependsOn: []string{"deploy.flare", "freeze.counts"}, timeoutSec: 600,
		},
		"priming block": {
			addr: `block.primary["incumbent_before/c1/prime"]`, arm: "incumbent_before", cell: "incumbent_before/c1",
			phase: "priming", rep: 0, conc: 1, dependsOn: []string{"freeze.counts"}, timeoutSec: 600,
		},
		"arm after setup": {
			addr: `block.primary["incumbent_after/c1/r3"]`, arm: "incumbent_after", cell: "incumbent_after/c1",
			phase: "measured", rep: 3, conc: 1, dependsOn: []string{"deploy.incumbent_again", "freeze.counts"}, timeoutSec: 600,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			inst, ok := p.Instance(tc.addr)
			if !ok {
				t.Fatalf("no instance %s", tc.addr)
			}
			if inst.Type != "block" || inst.Name != "primary" || !inst.Keyed {
				t.Errorf("type/name/keyed = %s/%s/%v, want block/primary/true", inst.Type, inst.Name, inst.Keyed)
			}
			if inst.Arm != tc.arm || inst.Cell != tc.cell || inst.Meta.Phase != tc.phase {
				t.Errorf("arm/cell/phase = %s/%s/%s, want %s/%s/%s", inst.Arm, inst.Cell, inst.Meta.Phase, tc.arm, tc.cell, tc.phase)
			}
			if got := inst.Meta.Timeout.Seconds(); got != tc.timeoutSec {
				t.Errorf("timeout = %vs, want %vs", got, tc.timeoutSec)
			}
			if diff := cmp.Diff([]string{"gpu"}, inst.Meta.Uses); diff != "" {
				t.Errorf("uses (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.dependsOn, inst.DependsOn); diff != "" {
				t.Errorf("DependsOn (-want +got):\n%s", diff)
			}
			cfg := inst.Config()
			if got := cfg.GetAttr("repetition"); !got.RawEquals(cty.NumberIntVal(tc.rep)) {
				t.Errorf("repetition = %#v, want %d", got, tc.rep)
			}
			if got := cfg.GetAttr("concurrency"); !got.RawEquals(cty.NumberIntVal(tc.conc)) {
				t.Errorf("concurrency = %#v, want %d", got, tc.conc)
			}
			if got := cfg.GetAttr("cell").AsString(); got != tc.cell {
				t.Errorf("config cell = %q, want %q", got, tc.cell)
			}
			if plans.IsWholeKnown(cfg.GetAttr("requests")) {
				t.Errorf("requests is known at plan time; it must wait for step.freeze.counts")
			}
		})
	}
	restore, ok := p.Instance("restore.incumbent")
	if !ok || !restore.Meta.Always || restore.Meta.Outage != "end" {
		t.Errorf("restore.incumbent: found=%v always=%v outage=%q, want always restore ending the outage", ok, restore != nil && restore.Meta.Always, restore.Meta.Outage)
	}
	if c := p.Campaign; c.Name != "flare-wave1" || c.Outage == nil || c.Outage.Budget.Minutes() != 90 || c.Outage.Reserve.Minutes() != 20 {
		t.Errorf("campaign = %+v, want flare-wave1 with a 90m budget and 20m reserve", c)
	}
}

// TestUnknownRendering checks how values that wait for steps are shown in the
// canonical plan: each unknown names the steps it waits for.
func TestUnknownRendering(t *testing.T) {
	tests := map[string]struct {
		path, addr string
		get        func(v cty.Value) cty.Value
		want       string
	}{
		"one pilot instance": {
			path: seedPath, addr: "freeze.counts",
			get:  func(v cty.Value) cty.Value { return v.GetAttr("values").GetAttr("c4") },
			want: `(known after step.block.pilot["c4"])`,
		},
		"two pilot instances": {
			path: "testdata/valid/build_chain.hcl", addr: "freeze.total",
			get:  func(v cty.Value) cty.Value { return v.GetAttr("values").GetAttr("requests") },
			want: `(known after step.block.pilot["c2"], step.block.pilot["c8"])`,
		},
		"frozen counts in a matrix": {
			path: seedPath, addr: `block.primary["flare_instrumented/c4/r1"]`,
			get:  func(v cty.Value) cty.Value { return v.GetAttr("requests") },
			want: "(known after step.freeze.counts)",
		},
		"target image from a build": {
			path: "testdata/valid/build_chain.hcl", addr: `block.pilot["c8"]`,
			get:  func(v cty.Value) cty.Value { return v.GetAttr("target").GetAttr("image") },
			want: "(known after step.exec.build)",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := mustLoad(t, tc.path, plans.Options{})
			inst, ok := p.Instance(tc.addr)
			if !ok {
				t.Fatalf("no instance %s", tc.addr)
			}
			if got := plans.CanonicalValue(tc.get(inst.Config())); got != tc.want {
				t.Errorf("CanonicalValue = %#v, want %q", got, tc.want)
			}
			if !strings.Contains(string(mustJSON(t, p)), strings.ReplaceAll(tc.want, `"`, `\"`)) {
				t.Errorf("canonical JSON does not contain %s", tc.want)
			}
		})
	}
}

// TestContextOutputs re-evaluates the freeze step with the pilot's outputs, as the
// engine does: the seed's counts come out as 52 and 160.
func TestContextOutputs(t *testing.T) {
	p := mustLoad(t, seedPath, plans.Options{})
	hash := mustHash(t, p)
	out := func(spr float64, c int64) cty.Value {
		return cty.ObjectVal(map[string]cty.Value{
			"seconds_per_request": cty.NumberFloatVal(spr),
			"concurrency":         cty.NumberIntVal(c),
			"requests":            cty.NumberIntVal(16),
		})
	}
	ctx, diags := p.Context(plans.Outputs{
		`block.pilot["c1"]`: out(2.31, 1),
		`block.pilot["c4"]`: out(0.76, 4),
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	inst, _ := p.Instance("freeze.counts")
	v, diags := inst.Evaluate(ctx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	got := plans.CanonicalValue(v.GetAttr("values"))
	want := map[string]any{"c1": jsonNumber("52"), "c4": jsonNumber("160")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frozen counts (-want +got):\n%s", diff)
	}
	// The matrix picks its count per concurrency once freeze.counts has run.
	ctx, _ = p.Context(plans.Outputs{"freeze.counts": cty.ObjectVal(map[string]cty.Value{
		"values": cty.ObjectVal(map[string]cty.Value{"c1": cty.NumberIntVal(52), "c4": cty.NumberIntVal(160)}),
	})})
	blk, _ := p.Instance(`block.primary["incumbent_after/c4/r3"]`)
	bv, diags := blk.Evaluate(ctx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := bv.GetAttr("requests"); !got.RawEquals(cty.NumberIntVal(160)) {
		t.Errorf("requests at c4 = %#v, want 160", got)
	}
	// The values a matrix's blocks share are kept per context: the plan-time
	// configuration and hash still wait for freeze.counts, and a context with
	// other counts gets its own, for this block and its siblings.
	if got := blk.Config().GetAttr("requests"); got.IsKnown() {
		t.Errorf("plan-time requests at c4 = %#v after an evaluation with outputs, want unknown", got)
	}
	if h := mustHash(t, p); h != hash {
		t.Errorf("plan hash %s after evaluations with outputs, was %s", h, hash)
	}
	ctx, _ = p.Context(plans.Outputs{"freeze.counts": cty.ObjectVal(map[string]cty.Value{
		"values": cty.ObjectVal(map[string]cty.Value{"c1": cty.NumberIntVal(8), "c4": cty.NumberIntVal(96)}),
	})})
	for _, addr := range []string{`block.primary["incumbent_after/c4/r3"]`, `block.primary["incumbent_after/c4/r2"]`} {
		b, _ := p.Instance(addr)
		v, diags := b.Evaluate(ctx)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		if got := v.GetAttr("requests"); !got.RawEquals(cty.NumberIntVal(96)) {
			t.Errorf("%s requests = %#v in a second context, want 96", addr, got)
		}
	}
}

func TestSensitiveNeverInPlan(t *testing.T) {
	const secret = "sk-do-not-leak-0451"
	type opt struct {
		name string
		opts plans.Options
	}
	options := []opt{
		{"default", plans.Options{}},
		{"flag", plans.Options{Vars: []string{"api_key=sk-flag-secret-7"}}},
		{"env", plans.Options{Env: []string{"RIGOR_VAR_api_key=sk-env-secret-8"}}},
	}
	tests := map[string]struct {
		path, addr string // addr: an instance whose config holds the target
	}{
		"seed":        {path: seedPath, addr: "restore.incumbent"},
		"build chain": {path: "testdata/valid/build_chain.hcl", addr: `block.pilot["c2"]`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var hashes []string
			for _, o := range options {
				t.Run(o.name, func(t *testing.T) {
					p := mustLoad(t, tc.path, o.opts)
					js := string(mustJSON(t, p))
					for _, s := range []string{secret, "sk-flag-secret-7", "sk-env-secret-8", "sk-"} {
						if strings.Contains(js, s) {
							t.Errorf("canonical JSON contains the secret %q", s)
						}
					}
					if !strings.Contains(js, `"api_key":"(sensitive)"`) {
						t.Errorf("canonical JSON does not render the key as %q", plans.SensitiveText)
					}
					inst, ok := p.Instance(tc.addr)
					if !ok {
						t.Fatalf("no instance %s", tc.addr)
					}
					key := inst.Config().GetAttr("target").GetAttr("api_key")
					if got := plans.CanonicalValue(key); got != plans.SensitiveText {
						t.Errorf("api_key renders as %#v, want %q", got, plans.SensitiveText)
					}
					// The step still receives the real value.
					if raw, _ := key.Unmark(); !strings.HasPrefix(raw.AsString(), "sk-") {
						t.Errorf("the step's config lost the key: %#v", raw)
					}
					hashes = append(hashes, mustHash(t, p))
				})
			}
			// A secret is not part of the plan: changing it leaves the hash alone.
			for i := 1; i < len(hashes); i++ {
				if hashes[i] != hashes[0] {
					t.Errorf("plan hash depends on a sensitive value: %v", hashes)
				}
			}
		})
	}
}

func TestPlanHash(t *testing.T) {
	tests := map[string]struct {
		path                string
		sameVar, changedVar string
	}{
		"seed":        {path: seedPath, sameVar: "model=glm53", changedVar: "model=glm54"},
		"build chain": {path: "testdata/valid/build_chain.hcl", sameVar: "label=baseline", changedVar: "label=candidate"},
		"list var":    {path: "testdata/valid/build_chain.hcl", sameVar: "concurrencies=[2, 8]", changedVar: "concurrencies=[2, 8, 32]"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			base := mustHash(t, mustLoad(t, tc.path, plans.Options{}))
			if again := mustHash(t, mustLoad(t, tc.path, plans.Options{})); again != base {
				t.Errorf("two loads of the same campaign hash differently: %s, %s", base, again)
			}
			if len(base) != 64 {
				t.Errorf("hash %q is not hex sha256", base)
			}
			if h := mustHash(t, mustLoad(t, tc.path, plans.Options{Vars: []string{tc.sameVar}})); h != base {
				t.Errorf("--var %s (the default) changed the hash", tc.sameVar)
			}
			if h := mustHash(t, mustLoad(t, tc.path, plans.Options{Vars: []string{tc.changedVar}})); h == base {
				t.Errorf("--var %s did not change the hash", tc.changedVar)
			}
		})
	}
}

func TestLoadDirectory(t *testing.T) {
	p := mustLoad(t, "testdata/valid/split", plans.Options{})
	if diff := cmp.Diff([]string{"restore.incumbent", "deploy.incumbent"}, addrs(p)); diff != "" {
		t.Errorf("instances of a directory campaign keep declaration order across files (-want +got):\n%s", diff)
	}
	var names []string
	for _, s := range p.Sources {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"a_campaign.hcl", "b_steps.hcl"}, names); diff != "" {
		t.Errorf("Sources (-want +got):\n%s", diff)
	}
	if len(p.Files()) != 2 {
		t.Errorf("Files() has %d files, want 2", len(p.Files()))
	}
}

func TestLoadMissingPath(t *testing.T) {
	tests := map[string]struct {
		path    string
		summary string
	}{
		"no such file":    {path: "testdata/does-not-exist.hcl", summary: "Campaign not found"},
		"directory empty": {path: t.TempDir(), summary: "No campaign files"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p, diags := load(t, tc.path, plans.Options{})
			if p != nil || !diags.HasErrors() || diags[0].Summary != tc.summary {
				t.Errorf("Load(%s) = %v, %v; want nil plan and %q", tc.path, p, diags, tc.summary)
			}
		})
	}
}

func TestDiffPlans(t *testing.T) {
	src, err := os.ReadFile(seedPath)
	if err != nil {
		t.Fatal(err)
	}
	old := mustJSON(t, mustLoad(t, seedPath, plans.Options{}))
	dir := t.TempDir()
	edited := filepath.Join(dir, "seed.hcl")
	moreReps := strings.Replace(string(src), "repetitions = 3", "repetitions = 4", 1)
	moreReps = strings.Replace(moreReps, `timeout     = "600s"`, `timeout     = "900s"`, 1)
	if err := os.WriteFile(edited, []byte(moreReps), 0o644); err != nil {
		t.Fatal(err)
	}
	d, err := plans.DiffPlans(old, mustJSON(t, mustLoad(t, edited, plans.Options{})))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, c := range d.Changes {
		kinds[c.Kind]++
	}
	// 4 arms x 2 concurrencies gain an r4; the 32 old blocks change their timeout;
	// the two setup deploys now also start after the r4 blocks of the previous arm.
	if diff := cmp.Diff(map[string]int{"added": 8, "changed": 34}, kinds); diff != "" {
		t.Errorf("change kinds (-want +got):\n%s", diff)
	}
	if got, want := d.Summary(), "8 added, 34 changed"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	for _, c := range d.Changes {
		if c.Kind == "changed" && strings.HasPrefix(c.Addr, "deploy.") {
			if len(c.Attrs) != 1 || c.Attrs[0].Path != "after" || !strings.Contains(c.Attrs[0].New, "/c4/r4") {
				t.Errorf("%s attrs = %+v, want only after gaining the r4 blocks", c.Addr, c.Attrs)
			}
			continue
		}
		if c.Kind == "changed" {
			// The timeout is known at plan time, so the configuration shows it and
			// nothing else moves: the matrix's expressions are unchanged.
			if diff := cmp.Diff([]plans.AttrChange{{Path: "meta.timeout_s", Old: "600", New: "900"}}, c.Attrs); diff != "" {
				t.Errorf("%s attrs (-want +got):\n%s", c.Addr, diff)
			}
		}
	}
	same, err := plans.DiffPlans(old, old)
	if err != nil || !same.Empty() || same.Summary() != "no changes" {
		t.Errorf("a plan differs from itself: %+v, %v", same, err)
	}
}

func jsonNumber(s string) any { return encjson.Number(s) }

// TestContextStepFreeAndStepFedData: a context with step outputs evaluates again
// the data blocks and locals that read a step (here through a local) or a file a
// step may have rewritten, and keeps the plan-time values of those that read
// neither, in the plan-time context and in one with outputs.
func TestContextStepFreeAndStepFedData(t *testing.T) {
	dir := writeFiles(t, map[string]string{"note.txt": "a", "c.hcl": `
campaign "c" {
  outage {
    budget  = "1h"
    reserve = "10m"
  }
}
host "h" {
  runtime = "sim"
  gpus    = "sim"
}
step "freeze" "tag" {
  values = { v = 7 }
}
locals {
  suffix = "v${step.freeze.tag.values.v}"
}
target "fixed" {
  host      = host.h
  container = "fixed"
  endpoint  = "http://127.0.0.1:1"
}
target "tagged" {
  host      = host.h
  container = "c-${local.suffix}"
  endpoint  = "http://127.0.0.1:2"
}
locals {
  note = file("note.txt")
}
target "noted" {
  host      = host.h
  container = "n-${local.note}"
  endpoint  = "http://127.0.0.1:3"
}
`})
	p := mustLoad(t, filepath.Join(dir, "c.hcl"), plans.Options{})
	container := func(ctx *hcl.EvalContext, target string) cty.Value {
		t.Helper()
		v, _ := ctx.Variables["target"].GetAttr(target).GetAttr("container").Unmark()
		return v
	}
	before, diags := p.Context(nil)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := container(before, "tagged"); got.IsKnown() {
		t.Errorf("tagged's container before freeze.tag ran = %#v, want unknown", got)
	}
	if got := container(before, "noted"); !got.RawEquals(cty.StringVal("n-a")) {
		t.Errorf("noted's container = %#v, want n-a", got)
	}
	// A step rewrites the file the local reads.
	if err := os.WriteFile(filepath.Join(dir, "note.txt"), []byte("b"), 0o644); err != nil {
		t.Fatal(err)
	}
	after, diags := p.Context(plans.Outputs{"freeze.tag": cty.ObjectVal(map[string]cty.Value{
		"values": cty.ObjectVal(map[string]cty.Value{"v": cty.NumberIntVal(7)}),
	})})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := container(after, "tagged"); !got.RawEquals(cty.StringVal("c-v7")) {
		t.Errorf("tagged's container after freeze.tag ran = %#v, want c-v7", got)
	}
	if got := container(after, "noted"); !got.RawEquals(cty.StringVal("n-b")) {
		t.Errorf("noted's container after its file changed = %#v, want n-b", got)
	}
	for _, ctx := range []*hcl.EvalContext{before, after} {
		if got := container(ctx, "fixed"); !got.RawEquals(cty.StringVal("fixed")) {
			t.Errorf("fixed's container = %#v, want fixed", got)
		}
	}
}

// TestStepNamespaceHoldsWhatIsRead: the step namespace of a context holds the
// steps an expression reads the outputs of, not those only ordered after
// (depends_on) or whose outcome a condition reads; the expressions still see
// what they read.
func TestStepNamespaceHoldsWhatIsRead(t *testing.T) {
	dir := writeFiles(t, map[string]string{"c.hcl": `
campaign "c" {
  outage {
    budget  = "1h"
    reserve = "10m"
  }
}
step "freeze" "read" {
  values = { v = 1 }
}
step "freeze" "ordered" {
  values = { v = 2 }
}
step "exec" "uses" {
  command    = ["echo", tostring(step.freeze.read.values.v)]
  depends_on = [step.freeze.ordered]
  condition  = outcome.freeze.ordered.status == "succeeded"
}
`})
	p := mustLoad(t, filepath.Join(dir, "c.hcl"), plans.Options{})
	ctx, diags := p.Context(plans.Outputs{"freeze.read": cty.ObjectVal(map[string]cty.Value{
		"values": cty.ObjectVal(map[string]cty.Value{"v": cty.NumberIntVal(1)}),
	})})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	freezes := ctx.Variables["step"].GetAttr("freeze")
	if !freezes.Type().HasAttribute("read") || freezes.Type().HasAttribute("ordered") {
		t.Errorf("step.freeze holds %v, want read alone", freezes.Type().AttributeTypes())
	}
	inst, _ := p.Instance("exec.uses")
	v, diags := inst.Evaluate(ctx)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := v.GetAttr("command").Index(cty.NumberIntVal(1)); !got.RawEquals(cty.StringVal("1")) {
		t.Errorf("command[1] = %#v, want the read step's output 1", got)
	}
}
