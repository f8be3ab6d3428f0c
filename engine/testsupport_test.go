package engine_test

import (
	"context"
	"errors"
	"fmt"
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
	pinned  map[string]map[string]string // addr -> StepContext.Pinned it saw
	history map[string][]engine.Ended    // addr -> StepContext.History() at its start
	hooks   map[string]func()            // run synchronously inside the step of that address
	rigor   map[string]string            // addr -> StepContext.Rigor it saw
}

// when runs fn inside the step addr, before it returns: a test changes the world
// "while a step runs" without racing the scheduler.
func (p *probe) when(addr string, fn func()) {
	p.mu.Lock()
	p.hooks[addr] = fn
	p.mu.Unlock()
}

func newProbe(clock *engine.FakeClock) *probe {
	return &probe{active: map[string]int{}, overlap: map[string]bool{}, clock: clock, started: make(chan string, 100),
		pinned: map[string]map[string]string{}, history: map[string][]engine.Ended{}, hooks: map[string]func(){},
		rigor: map[string]string{}}
}

func (p *probe) Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"value":   &hcldec.AttrSpec{Name: "value", Type: cty.DynamicPseudoType},
		"fail":    &hcldec.AttrSpec{Name: "fail", Type: cty.String},
		"advance": &hcldec.AttrSpec{Name: "advance", Type: cty.String},
		"sleep":   &hcldec.AttrSpec{Name: "sleep", Type: cty.String},
		"hang":    &hcldec.AttrSpec{Name: "hang", Type: cty.Bool},
		"file":    &hcldec.AttrSpec{Name: "file", Type: cty.String},
		// write_kb writes an artefact of that many KiB (to fill a small disk).
		"write_kb": &hcldec.AttrSpec{Name: "write_kb", Type: cty.Number},
		// fail_if_exists fails the step while the named file exists, so a test can
		// make a restore fail and then succeed without changing the plan.
		"fail_if_exists": &hcldec.AttrSpec{Name: "fail_if_exists", Type: cty.String},
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
	p.mu.Lock()
	p.pinned[sc.Addr] = sc.Pinned
	p.history[sc.Addr] = sc.History()
	p.rigor[sc.Addr] = sc.Rigor
	hook := p.hooks[sc.Addr]
	p.mu.Unlock()
	if hook != nil {
		hook()
	}
	if v := cfg.GetAttr("write_kb"); !v.IsNull() {
		n, _ := v.AsBigFloat().Int64()
		if err := os.WriteFile(sc.Path("big.bin"), make([]byte, n<<10), 0o644); err != nil {
			return engine.Failed(engine.ClassInternal, "write big.bin: %v", err)
		}
	}
	if v := cfg.GetAttr("fail_if_exists"); !v.IsNull() {
		if _, err := os.Stat(v.AsString()); err == nil {
			return engine.Failed(engine.ClassIdentity, "probe told to fail while %s exists", v.AsString())
		}
	}
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
	world *world
	reg   engine.Registry
}

// testRigor stands for the build cmd/rigor passes as Options.Rigor.
const testRigor = "v9.9.9 (0123456789ab, modified)"

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	clock := engine.NewFakeClock(time.Date(2026, 10, 22, 2, 0, 0, 0, time.UTC))
	p := newProbe(clock)
	w := newWorld(p)
	return &harness{t: t, dir: dir, state: filepath.Join(dir, "state"), clock: clock, probe: p, world: w,
		reg: engine.Registry{"probe": p, "world": w}}
}

// world is a step type that puts something in place, as a deploy does: it
// implements Refresher (the incarnation it deployed must still be there) and
// PinnedInputs (a named digest the test controls). Its runs are recorded by the
// probe so run orders interleave.
type world struct {
	p           *probe
	mu          sync.Mutex
	incarnation map[string]string // key -> what is running there now
	digests     map[string]string // pin name -> digest the step reports now
	n           int
}

func newWorld(p *probe) *world {
	return &world{p: p, incarnation: map[string]string{}, digests: map[string]string{}}
}

func (w *world) Spec() hcldec.ObjectSpec {
	return hcldec.ObjectSpec{
		"key": &hcldec.AttrSpec{Name: "key", Type: cty.String, Required: true},
		"pin": &hcldec.AttrSpec{Name: "pin", Type: cty.String},
	}
}

func (w *world) OutputType() cty.Type {
	return cty.Object(map[string]cty.Type{"key": cty.String, "incarnation": cty.String})
}

func (w *world) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	w.p.mu.Lock()
	w.p.order = append(w.p.order, sc.Addr)
	w.p.pinned[sc.Addr] = sc.Pinned
	w.p.mu.Unlock()
	w.p.started <- sc.Addr
	key := sc.Config.GetAttr("key").AsString()
	w.mu.Lock()
	w.n++
	inc := fmt.Sprintf("%s#%d", sc.Addr, w.n)
	w.incarnation[key] = inc
	w.mu.Unlock()
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "incarnation": cty.StringVal(inc)}))
}

func (w *world) RefreshKey(cfg cty.Value) string { return cfg.GetAttr("key").AsString() }

func (w *world) Refresh(_ context.Context, cfg, outputs cty.Value) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := cfg.GetAttr("key").AsString()
	if got, want := w.incarnation[key], outputs.GetAttr("incarnation").AsString(); got != want {
		return fmt.Errorf("%s runs %q, the journal recorded %q", key, got, want)
	}
	return nil
}

func (w *world) PinnedInputs(cfg cty.Value, _ string) (map[string]string, error) {
	v := cfg.GetAttr("pin")
	if v.IsNull() {
		return nil, nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return map[string]string{v.AsString(): w.digests[v.AsString()]}, nil
}

// set changes the world behind the engine's back.
func (w *world) set(key, inc string) {
	w.mu.Lock()
	w.incarnation[key] = inc
	w.mu.Unlock()
}

func (w *world) pin(name, digest string) {
	w.mu.Lock()
	w.digests[name] = digest
	w.mu.Unlock()
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
	return engine.Apply(ctx, p, h.reg, engine.Options{StateDir: h.state, Clock: h.clock, Log: zerolog.Nop(), Grace: 2 * time.Second, Rigor: testRigor})
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
