package block_test

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// blockConfig is a decoded block configuration: every attribute of the schema, null
// unless set.
func blockConfig(attrs map[string]cty.Value) cty.Value {
	full := map[string]cty.Value{}
	for name, s := range (block.Step{}).Spec() {
		if v, ok := attrs[name]; ok {
			full[name] = v
			continue
		}
		full[name] = cty.NullVal(hcldec.ImpliedType(s))
	}
	return cty.ObjectVal(full)
}

func pinConfig(target string, conc, requests int, mods map[string]cty.Value) cty.Value {
	attrs := map[string]cty.Value{
		"target": cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(target), "endpoint": cty.StringVal("http://127.0.0.1:1")}),
		"workload": cty.ObjectVal(map[string]cty.Value{
			"name": cty.StringVal("capacity"), "corpus": cty.StringVal("synthetic-summary"),
			"corpus_seed": cty.NumberIntVal(4342), "nominal_context": cty.NumberIntVal(1024), "prefixes": cty.StringVal("unique"),
			"fresh_prefixes": cty.False,
		}),
		"concurrency": cty.NumberIntVal(int64(conc)),
		"requests":    cty.NumberIntVal(int64(requests)),
		"repetition":  cty.NumberIntVal(1),
		"phase":       cty.StringVal("measured"),
	}
	for k, v := range mods {
		attrs[k] = v
	}
	return blockConfig(attrs)
}

// TestPinnedInputs holds the digest the engine pins to the corpus identity: every arm
// of a cell (another target, another repetition, the priming block) reports the same
// name and digest; another cell, the pilot lane, another seed, another request count
// or another repetition of a cold lane changes what is reported.
func TestPinnedInputs(t *testing.T) {
	pins := func(cfg cty.Value) (string, string) {
		t.Helper()
		m, err := block.Step{}.PinnedInputs(cfg, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 1 {
			t.Fatalf("pinned %v, want one corpus digest", m)
		}
		for k, v := range m {
			return k, v
		}
		return "", ""
	}
	baseKey, base := pins(pinConfig("incumbent", 4, 160, nil))
	if baseKey != "corpus workload.capacity s4342 c4 main" || len(base) != 64 {
		t.Fatalf("pinned %q = %q", baseKey, base)
	}
	same := map[string]cty.Value{
		"another arm's target":       pinConfig("candidate", 4, 160, map[string]cty.Value{"arm": cty.StringVal("b")}),
		"another repetition":         pinConfig("incumbent", 4, 160, map[string]cty.Value{"repetition": cty.NumberIntVal(3)}),
		"the priming block":          pinConfig("incumbent", 4, 160, map[string]cty.Value{"phase": cty.StringVal("priming"), "repetition": cty.NumberIntVal(0)}),
		"the seed, set on the block": pinConfig("incumbent", 4, 160, map[string]cty.Value{"corpus_seed": cty.NumberIntVal(4342)}),
	}
	for name, cfg := range same {
		if k, d := pins(cfg); k != baseKey || d != base {
			t.Errorf("%s: pinned %q %s, want the cell's %q %s", name, k, d, baseKey, base)
		}
	}
	fresh := func(rep int64) cty.Value {
		w := pinConfig("incumbent", 4, 160, nil).GetAttr("workload").AsValueMap()
		w["fresh_prefixes"] = cty.True
		return pinConfig("incumbent", 4, 160, map[string]cty.Value{"workload": cty.ObjectVal(w), "repetition": cty.NumberIntVal(rep)})
	}
	differ := map[string]struct {
		cfg cty.Value
		key string
	}{
		"another cell":     {pinConfig("incumbent", 1, 160, nil), "corpus workload.capacity s4342 c1 main"},
		"the pilot":        {pinConfig("incumbent", 4, 160, map[string]cty.Value{"phase": cty.StringVal("pilot")}), "corpus workload.capacity s4342 c4 pilot"},
		"a per-cell seed":  {pinConfig("incumbent", 4, 160, map[string]cty.Value{"corpus_seed": cty.NumberIntVal(4642)}), "corpus workload.capacity s4642 c4 main"},
		"more requests":    {pinConfig("incumbent", 4, 164, nil), baseKey},
		"cold lane, rep 1": {fresh(1), "corpus workload.capacity s4342 c4 main r1"},
		"cold lane, rep 2": {fresh(2), "corpus workload.capacity s4342 c4 main r2"},
	}
	digests := map[string]string{base: "base"}
	for name, tc := range differ {
		k, d := pins(tc.cfg)
		if k != tc.key {
			t.Errorf("%s: key %q, want %q", name, k, tc.key)
		}
		if prev, dup := digests[d]; dup {
			t.Errorf("%s: digest equals %s's", name, prev)
		}
		digests[d] = name
	}
	// The target's protected files are pinned beside the corpus, as deploy and
	// identity pin them; one that cannot be read is named, never left out.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "discovery.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	protect := func(files ...string) cty.Value {
		tgt := pinConfig("incumbent", 4, 160, nil).GetAttr("target").AsValueMap()
		var l []cty.Value
		for _, f := range files {
			l = append(l, cty.StringVal(f))
		}
		tgt["protected_files"] = cty.ListVal(l)
		return pinConfig("incumbent", 4, 160, map[string]cty.Value{"target": cty.ObjectVal(tgt)})
	}
	m, err := block.Step{}.PinnedInputs(protect("discovery.json"), dir)
	if err != nil || len(m) != 2 || m[baseKey] != base || m["file discovery.json"] != "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a" {
		t.Errorf("with a protected file: %v, %v; want the corpus and the file's sha256", m, err)
	}
	if _, err := (block.Step{}).PinnedInputs(protect("discovery.json", "gone.json"), dir); err == nil || !strings.Contains(err.Error(), "protected file gone.json") {
		t.Errorf("unreadable protected file: %v", err)
	}
	// A configuration whose counts are not frozen yet cannot be pinned.
	if _, err := (block.Step{}).PinnedInputs(pinConfig("incumbent", 4, 0, map[string]cty.Value{"requests": cty.UnknownVal(cty.Number)}), ""); err == nil || !strings.Contains(err.Error(), "requests is not known yet") {
		t.Errorf("unknown requests: %v", err)
	}
}

// TestPinnedDigestIsWhatWasSent: the digest PinnedInputs reports before the block is
// the one result.json records for the prompts it sent, and sc.Pinned is recorded too.
func TestPinnedDigestIsWhatWasSent(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{requests: 6, phase: "measured", primed: true, repetition: 2})
	pinned, err := block.Step{}.PinnedInputs(run.config, "")
	if err != nil {
		t.Fatal(err)
	}
	c := run.block.Corpus
	if pinned[c.Key] == "" || pinned[c.Key] != c.SHA256 || c.Requests != 6 {
		t.Errorf("PinnedInputs %v, result.json %s = %s (%d requests)", pinned, c.Key, c.SHA256, c.Requests)
	}
}

// TestReattemptUsesNewRequestIDs: a block re-attempted after an interruption sends
// IDs that name the attempt, so no request ID is ever sent twice.
func TestReattemptUsesNewRequestIDs(t *testing.T) {
	rn := startSim(t, sim.Config{})
	first := runSimBlock(t, rn, blockOpts{requests: 4, phase: "measured", repetition: 1, instCell: "a/c4"})
	second := runSimBlock(t, rn, blockOpts{requests: 4, phase: "measured", repetition: 1, instCell: "a/c4", attempt: 2})
	for i := range 4 {
		a, b := recordByIndex(t, first.records, i), recordByIndex(t, second.records, i)
		if a.ID != "blocktest/block.t/a/c4/r1/"+itoa(i) || b.ID != "blocktest/block.t/a/c4/r1/a2/"+itoa(i) {
			t.Errorf("request %d: IDs %q and %q", i, a.ID, b.ID)
		}
	}
}

func recordByIndex(t *testing.T, recs []loadgen.Record, i int) loadgen.Record {
	t.Helper()
	for _, r := range recs {
		if r.Index == i {
			return r
		}
	}
	t.Fatalf("no record %d", i)
	return loadgen.Record{}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestWarmupOnDeadTargetIsHealth: nothing listens on the target's port, so the
// connection warm-up fails: a health failure of the target, not a configuration
// error, and nothing was sent.
func TestWarmupOnDeadTargetIsHealth(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String()
	l.Close()
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{requests: 4, targetAttrs: map[string]cty.Value{"endpoint": cty.StringVal(dead)}})
	if run.res.Status != engine.StatusFailed || run.res.Class != engine.ClassHealth || !strings.Contains(run.res.Message, "warm-up") {
		t.Errorf("status %s class %s: %s", run.res.Status, run.res.Class, run.res.Message)
	}
	if len(run.records) != 0 {
		t.Errorf("%d records from a block that could not connect", len(run.records))
	}
}

// TestCancelledBeforeWarmupIsInterrupted: a block cancelled before its connections
// are open was interrupted, not a health failure of its target.
func TestCancelledBeforeWarmupIsInterrupted(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{requests: 4, cancelled: true})
	if run.res.Status != engine.StatusInterrupted || run.res.Class != engine.ClassInterrupted {
		t.Errorf("status %s class %s: %s", run.res.Status, run.res.Class, run.res.Message)
	}
}

// TestSGLangTarget runs a block against a simulator serving SGLang's metric names,
// through a target with engine = "sglang": the idle gate reads SGLang's gauges, the
// native counters and the cache reuse come from SGLang's counters, and the reset goes
// to SGLang's /flush_cache.
func TestSGLangTarget(t *testing.T) {
	rn := startSim(t, sim.Config{Engine: sim.EngineSGLang})
	sg := map[string]cty.Value{"engine": cty.StringVal("sglang"), "cache_reset": cty.StringVal("/flush_cache")}
	prime := runSimBlock(t, rn, blockOpts{requests: 6, phase: "priming", gates: []cty.Value{idleGate()}, targetAttrs: sg, reset: true})
	run := runSimBlock(t, rn, blockOpts{requests: 6, phase: "measured", primed: true, repetition: 1, gates: []cty.Value{idleGate()}, targetAttrs: sg})
	for _, r := range []blockRun{prime, run} {
		if r.res.Status != engine.StatusSucceeded {
			t.Fatalf("%s %s: %s", r.res.Status, r.res.Class, r.res.Message)
		}
		checkEvidence(t, r, 6)
		if r.block.Engine != "sglang" || r.block.NativeCounters == nil || len(r.block.NativeCounters.Missing) != 0 {
			t.Fatalf("engine %q counters %+v", r.block.Engine, r.block.NativeCounters)
		}
		// The model the requests sent (the profile's served name; the simulator
		// refuses any other) is recorded for the report's first screen.
		if prof, _ := sim.LookupProfile("incumbent"); r.block.Model != prof.ServedModelName {
			t.Errorf("result.json model %q, want %q", r.block.Model, prof.ServedModelName)
		}
	}
	if prime.block.Cache.Start.State != block.StartReset || prime.block.Cache.Start.Reset.Path != "/flush_cache" {
		t.Errorf("priming start %+v", prime.block.Cache.Start)
	}
	if f := fraction(t, run); f < 0.95 || run.block.Cache.Contradiction != nil {
		t.Errorf("primed reuse through SGLang's counters %.3f, contradiction %v", f, run.block.Cache.Contradiction)
	}
	n := run.block.NativeCounters
	if n.RequestSuccess["all"] != 6 || n.RequestsAborted == nil || *n.RequestsAborted != 0 {
		t.Errorf("requests %v aborted %v", n.RequestSuccess, n.RequestsAborted)
	}
}
