package engine_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// probe is a step type for engine tests: it records when it ran, can advance the fake
// clock, sleep, fail with a class, or block until cancelled.
type probe struct {
	mu      sync.Mutex
	order   []string
	active  map[string]int
	overlap map[string]bool // uses resource -> two holders seen at once
	clock   *engine.FakeClock
	started chan string
}

func newProbe(clock *engine.FakeClock) *probe {
	return &probe{active: map[string]int{}, overlap: map[string]bool{}, clock: clock, started: make(chan string, 100)}
}

func (p *probe) Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"value":   &hcldec.AttrSpec{Name: "value", Type: cty.DynamicPseudoType},
		"fail":    &hcldec.AttrSpec{Name: "fail", Type: cty.String},
		"advance": &hcldec.AttrSpec{Name: "advance", Type: cty.String},
		"sleep":   &hcldec.AttrSpec{Name: "sleep", Type: cty.String},
		"hang":    &hcldec.AttrSpec{Name: "hang", Type: cty.Bool},
		"file":    &hcldec.AttrSpec{Name: "file", Type: cty.String},
	}
}

func (p *probe) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"value": cty.DynamicPseudoType, "n": cty.Number})
}

func (p *probe) Files(cfg cty.Value) []string {
	if v := cfg.GetAttr("file"); !v.IsNull() {
		return []string{v.AsString()}
	}
	return nil
}

func (p *probe) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	p.mu.Lock()
	p.order = append(p.order, sc.Addr)
	uses := sc.Instance.Meta.Uses
	for _, u := range uses {
		p.active[u]++
		if p.active[u] > 1 {
			p.overlap[u] = true
		}
	}
	n := len(p.order)
	p.mu.Unlock()
	p.started <- sc.Addr
	defer func() {
		p.mu.Lock()
		for _, u := range uses {
			p.active[u]--
		}
		p.mu.Unlock()
	}()
	_ = os.WriteFile(sc.Path("out.txt"), []byte(sc.Addr+"\n"), 0o644)
	cfg := sc.Config
	if v := cfg.GetAttr("advance"); !v.IsNull() {
		d, _ := time.ParseDuration(v.AsString())
		p.clock.Advance(d)
	}
	if v := cfg.GetAttr("sleep"); !v.IsNull() {
		d, _ := time.ParseDuration(v.AsString())
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return engine.Result{Status: engine.StatusFailed}
		}
	}
	if v := cfg.GetAttr("hang"); !v.IsNull() && v.True() {
		<-ctx.Done()
		return engine.Result{Status: engine.StatusFailed}
	}
	if v := cfg.GetAttr("fail"); !v.IsNull() {
		return engine.Failed(engine.FailureClass(v.AsString()), "probe told to fail with %s", v.AsString())
	}
	val := cfg.GetAttr("value")
	if val.IsNull() {
		val = cty.StringVal(sc.Addr)
	}
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{"value": val, "n": cty.NumberIntVal(int64(n))}))
}

func (p *probe) ran() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.order...)
}

type harness struct {
	t     *testing.T
	dir   string
	state string
	clock *engine.FakeClock
	probe *probe
	reg   engine.Registry
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	clock := engine.NewFakeClock(time.Date(2026, 10, 22, 2, 0, 0, 0, time.UTC))
	p := newProbe(clock)
	return &harness{t: t, dir: dir, state: filepath.Join(dir, "state"), clock: clock, probe: p,
		reg: engine.Registry{"probe": p}}
}

func (h *harness) write(src string) string {
	h.t.Helper()
	path := filepath.Join(h.dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

func (h *harness) load(src string, vars ...string) *plans.Plan {
	h.t.Helper()
	p, _, diags := plans.Load(h.write(src), plans.Options{StepTypes: h.reg.Types(), Vars: vars, Env: []string{}})
	if diags.HasErrors() {
		h.t.Fatalf("load: %s", diagText(diags))
	}
	return p
}

func diagText(diags hcl.Diagnostics) string {
	s := ""
	for _, d := range diags {
		s += d.Error() + "\n"
	}
	return s
}

func (h *harness) apply(ctx context.Context, p *plans.Plan) (*engine.Summary, error) {
	return engine.Apply(ctx, p, h.reg, engine.Options{StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), Grace: 2 * time.Second})
}

// interruptWhen returns a context cancelled with signal as its cause once the step
// addr starts, as the CLI's signal handler cancels an apply.
func (h *harness) interruptWhen(addr, signal string) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	go func() {
		for a := range h.probe.started {
			if a == addr {
				cancel(errors.New(signal))
				return
			}
		}
	}()
	return ctx
}

func (h *harness) records() []engine.Record {
	h.t.Helper()
	recs, _, err := engine.ReadJournal(filepath.Join(h.state, engine.JournalFile))
	if err != nil {
		h.t.Fatalf("journal: %v", err)
	}
	return recs
}

// finals maps each step to the status of its last step_end record.
func (h *harness) finals() map[string]engine.Record {
	out := map[string]engine.Record{}
	for _, r := range h.records() {
		if r.Kind == engine.KindStepEnd {
			out[r.Step] = r
		}
	}
	return out
}
