package block_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// cell runs blocks against one simulated server the way a campaign does, keeping the
// ended attempts as the engine's History would.
type cell struct {
	t       *testing.T
	rn      *sim.Running
	history []engine.Ended
}

func (c *cell) run(addr string, o blockOpts) blockRun {
	c.t.Helper()
	o.addr = addr
	o.history = append([]engine.Ended(nil), c.history...)
	if o.targetAttrs == nil {
		o.targetAttrs = map[string]cty.Value{}
	}
	o.targetAttrs["container"] = cty.StringVal("cache-test")
	o.targetAttrs["cache_reset"] = cty.StringVal("/reset_prefix_cache")
	if o.requests == 0 {
		o.requests = 8
	}
	run := runSimBlock(c.t, c.rn, o)
	if run.res.Status != engine.StatusSucceeded {
		c.t.Fatalf("%s: %s %s: %s", addr, run.res.Status, run.res.Class, run.res.Message)
	}
	checkEvidence(c.t, run, o.requests)
	c.history = append(c.history, engine.Ended{Addr: addr, Type: "block", Attempt: 1, Status: run.res.Status, Outputs: run.res.Outputs, Seq: len(c.history) + 1})
	return run
}

func fraction(t *testing.T, run blockRun) float64 {
	t.Helper()
	o := run.block.Cache.Observed
	if o.Source != "native" || o.Fraction == nil || o.Native == nil || o.CachedTokens == nil {
		t.Fatalf("observed %+v: want the native counters and cached_tokens both", o)
	}
	// The simulator's counters and its usage report the same reuse.
	if o.Native.Fraction != o.CachedTokens.Fraction {
		t.Errorf("native fraction %v != cached_tokens fraction %v", o.Native.Fraction, o.CachedTokens.Fraction)
	}
	return *o.Fraction
}

// TestCorpusProtocolReuse runs seed 001's protocol on one server and holds every
// block to the cache state it declares: the pilot and the priming block are cold
// (the pilot's lane and each cell's corpus are disjoint), the measured repetitions
// find the primed corpus (near 100 % cached), a second arm that does not reset
// inherits the first arm's cache (and says so), an arm that resets starts cold, and a
// cold lane stays cold every repetition.
func TestCorpusProtocolReuse(t *testing.T) {
	c := &cell{t: t, rn: startSim(t, sim.Config{})}
	type want struct {
		expected, start string
		lo, hi          float64
		contradiction   string // a substring; "" = none
		inherited       bool
		carriedFrom     string
	}
	check := func(name string, run blockRun, w want) {
		t.Helper()
		cs := run.block.Cache
		f := fraction(t, run)
		if cs.Expected != w.expected || cs.Start.State != w.start || f < w.lo || f > w.hi {
			t.Errorf("%s: expected %q start %q cached %.3f; want %q %q in [%.2f, %.2f]", name, cs.Expected, cs.Start.State, f, w.expected, w.start, w.lo, w.hi)
		}
		switch {
		case w.contradiction == "" && cs.Contradiction != nil:
			t.Errorf("%s: unexpected contradiction %q", name, *cs.Contradiction)
		case w.contradiction != "" && (cs.Contradiction == nil || !strings.Contains(*cs.Contradiction, w.contradiction)):
			t.Errorf("%s: contradiction %v, want one containing %q", name, cs.Contradiction, w.contradiction)
		}
		if cs.Start.Inherited != w.inherited {
			t.Errorf("%s: inherited_from_other_arm %v, want %v", name, cs.Start.Inherited, w.inherited)
		}
		if w.carriedFrom != "" && (cs.Start.CarriedFrom == nil || cs.Start.CarriedFrom.Addr != w.carriedFrom) {
			t.Errorf("%s: carried_from %+v, want %s", name, cs.Start.CarriedFrom, w.carriedFrom)
		}
	}

	pilot := c.run(`block.pilot["c4"]`, blockOpts{phase: "pilot", key: "c4"})
	check("pilot", pilot, want{expected: "cold", start: block.StartFreshServer, hi: 0})
	if pilot.block.Corpus.ID.Lane != "pilot" || pilot.block.Corpus.Key != "corpus workload.capacity s7 c4 pilot" {
		t.Errorf("pilot corpus %+v", pilot.block.Corpus)
	}

	prime := c.run(`block.m["a/c4/prime"]`, blockOpts{phase: "priming", arm: "a", instCell: "a/c4"})
	check("priming after the pilot", prime, want{expected: "cold", start: block.StartCarriedOver, hi: 0, inherited: true, carriedFrom: `block.pilot["c4"]`})
	var reps []blockRun
	for r := 1; r <= 2; r++ {
		run := c.run(`block.m["a/c4/r`+string(rune('0'+r))+`"]`, blockOpts{phase: "measured", primed: true, repetition: r, arm: "a", instCell: "a/c4"})
		check("measured", run, want{expected: "primed", start: block.StartCarriedOver, lo: 0.95, hi: 1, carriedFrom: c.history[len(c.history)-2].Addr})
		reps = append(reps, run)
	}
	// Priming and every repetition sent one corpus, under IDs of their own.
	for _, run := range reps {
		if run.block.Corpus.SHA256 != prime.block.Corpus.SHA256 || run.block.Corpus.Key != "corpus workload.capacity s7 c4 main" {
			t.Errorf("repetition corpus %s %s, priming %s", run.block.Corpus.Key, run.block.Corpus.SHA256, prime.block.Corpus.SHA256)
		}
	}
	if prime.block.Corpus.SHA256 == pilot.block.Corpus.SHA256 {
		t.Error("the pilot sent the measured corpus")
	}
	ids := map[string]bool{}
	for _, run := range append([]blockRun{prime}, reps...) {
		for _, r := range run.records {
			if ids[r.ID] {
				t.Errorf("request ID %s sent twice", r.ID)
			}
			ids[r.ID] = true
		}
	}
	if got := prime.block.Corpus.RequestIDPrefix; got != "blocktest/block.t/a/c4/prime" {
		t.Errorf("priming request ID prefix %q", got)
	}
	if got := reps[1].block.Corpus.RequestIDPrefix; got != "blocktest/block.t/a/c4/r2" {
		t.Errorf("repetition 2 request ID prefix %q", got)
	}

	// C1 is a corpus of its own: priming it after C4 finds nothing.
	c1 := c.run(`block.m["a/c1/prime"]`, blockOpts{phase: "priming", concurrency: 1, arm: "a", instCell: "a/c1"})
	check("c1 priming after c4", c1, want{expected: "cold", start: block.StartCarriedOver, hi: 0})

	// Arm b shares the container and does not reset: its priming block is served from
	// arm a's cache, which contradicts "cold" and is said to be inherited.
	inherited := c.run(`block.m["b/c4/prime"]`, blockOpts{phase: "priming", arm: "b", instCell: "b/c4"})
	check("second arm without reset", inherited, want{expected: "cold", start: block.StartCarriedOver, lo: 0.95, hi: 1,
		contradiction: "expected cold", inherited: true, carriedFrom: `block.m["a/c1/prime"]`})

	// Arm c resets first: cold, as declared.
	reset := c.run(`block.m["c/c4/prime"]`, blockOpts{phase: "priming", arm: "c", instCell: "c/c4", reset: true})
	check("third arm with reset", reset, want{expected: "cold", start: block.StartReset, hi: 0})
	if r := reset.block.Cache.Start.Reset; r == nil || r.Path != "/reset_prefix_cache" || r.Status != 200 {
		t.Errorf("reset call %+v", r)
	}

	// A cold lane: every repetition renders fresh prompts, so nothing is reused even
	// with the primed flag a matrix sets on later repetitions.
	for r := 1; r <= 2; r++ {
		run := c.run(`block.lane["a/c4/r`+string(rune('0'+r))+`"]`, blockOpts{phase: "measured", fresh: true, primed: r > 1, repetition: r, arm: "a"})
		// The first repetition runs after arm c's block on the same container.
		check("cold lane", run, want{expected: "cold", start: block.StartCarriedOver, hi: 0, inherited: r == 1})
		if !strings.HasSuffix(run.block.Corpus.Key, " r"+string(rune('0'+r))) {
			t.Errorf("cold lane key %q lacks its repetition", run.block.Corpus.Key)
		}
	}

	// Repeated prefixes share within the block, then the primed repetition finds all.
	// Matrix x's arm a is not the lane's arm a: what the lane left is inherited.
	shared := c.run(`block.x["a/c4/prime"]`, blockOpts{phase: "priming", prefixes: "repeated", arm: "a"})
	check("repeated priming", shared, want{expected: "shared", start: block.StartCarriedOver, lo: 0.5, hi: 0.95, inherited: true, carriedFrom: `block.lane["a/c4/r2"]`})
	primedShared := c.run(`block.x["a/c4/r1"]`, blockOpts{phase: "measured", prefixes: "repeated", primed: true, repetition: 1, arm: "a"})
	check("repeated measured", primedShared, want{expected: "primed", start: block.StartCarriedOver, lo: 0.95, hi: 1, carriedFrom: `block.x["a/c4/prime"]`})

	// A declared expectation overrides the protocol's, and is held to the counters.
	// Back in matrix m after matrix x's blocks, arm a inherits x's cache.
	declared := c.run(`block.m["a/c4/r3"]`, blockOpts{phase: "measured", primed: true, repetition: 3, arm: "a", expect: "cold"})
	check("declared cold on a primed corpus", declared, want{expected: "cold", start: block.StartCarriedOver, lo: 0.95, hi: 1, contradiction: "expected cold", inherited: true, carriedFrom: `block.x["a/c4/r1"]`})
	if declared.block.Cache.ExpectedFrom != "declared" || reps[0].block.Cache.ExpectedFrom != "derived" {
		t.Errorf("expected_from %q / %q", declared.block.Cache.ExpectedFrom, reps[0].block.Cache.ExpectedFrom)
	}
}

// TestPrimedCorpusNotResident primes a corpus larger than the server's prefix cache:
// the measured repetition finds almost nothing (seed 001: "a primed corpus is not
// necessarily resident") and result.json says the counters contradict the plan.
func TestPrimedCorpusNotResident(t *testing.T) {
	c := &cell{t: t, rn: startSim(t, sim.Config{PrefixCacheTokens: 1024})}
	// One request at a time, so the LRU order is the corpus order and what survives
	// priming does not depend on how concurrent requests interleave.
	c.run(`block.m["a/c1/prime"]`, blockOpts{phase: "priming", arm: "a", concurrency: 1})
	run := c.run(`block.m["a/c1/r1"]`, blockOpts{phase: "measured", primed: true, repetition: 1, arm: "a", concurrency: 1})
	cs := run.block.Cache
	if f := fraction(t, run); cs.Expected != "primed" || f > 0.1 || cs.Contradiction == nil || !strings.Contains(*cs.Contradiction, "not resident") {
		t.Errorf("expected %s, cached %.3f, contradiction %v", cs.Expected, f, cs.Contradiction)
	}
}

// TestCacheResetWithoutCall: a block that must reset a target without a cache_reset
// call fails as a configuration error before anything is sent.
func TestCacheResetWithoutCall(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{reset: true})
	if run.res.Class != engine.ClassConfig || !strings.Contains(run.res.Message, "declares no cache_reset call") || len(run.records) != 0 {
		t.Errorf("class %s %q, %d records", run.res.Class, run.res.Message, len(run.records))
	}
}

// TestExpectCacheMustBeAState: a declared expectation that is no cache state is a
// configuration error, found before anything is sent.
func TestExpectCacheMustBeAState(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{expect: "warm"})
	if run.res.Class != engine.ClassConfig || !strings.Contains(run.res.Message, `expect_cache "warm": want one of cold, primed, shared`) || len(run.records) != 0 {
		t.Errorf("class %s %q, %d records", run.res.Class, run.res.Message, len(run.records))
	}
}

// TestCacheResetRefused: a reset the server does not accept fails the block as class
// gate before anything is sent, naming the call and the server's answer: a path the
// engine does not serve (SGLang's flush on a vLLM server), and the simulator's
// refusal while a request is running (a reset under load would make the cache state
// of the requests in flight depend on timing).
func TestCacheResetRefused(t *testing.T) {
	check := func(t *testing.T, run blockRun, want string) {
		t.Helper()
		if run.res.Status != engine.StatusFailed || run.res.Class != engine.ClassGate || !strings.Contains(run.res.Message, want) {
			t.Errorf("%s (%s) %q; want failed (gate) containing %q", run.res.Status, run.res.Class, run.res.Message, want)
		}
		if _, err := os.Stat(filepath.Join(run.dir, "requests.jsonl")); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a block whose reset failed sent requests (requests.jsonl: %v)", err)
		}
	}
	t.Run("a path the engine does not serve", func(t *testing.T) {
		rn := startSim(t, sim.Config{})
		run := runSimBlock(t, rn, blockOpts{reset: true, targetAttrs: map[string]cty.Value{"cache_reset": cty.StringVal("/flush_cache")}})
		check(t, run, "cache reset before the block: POST /flush_cache: 40")
	})
	t.Run("a request running", func(t *testing.T) {
		rn := startSim(t, sim.Config{Faults: sim.Faults{HangRate: 1, HangAfter: 2}})
		cancel, hung := hangOne(t, rn)
		defer cancel()
		run := runSimBlock(t, rn, blockOpts{reset: true, targetAttrs: map[string]cty.Value{"cache_reset": cty.StringVal("/reset_prefix_cache")}})
		check(t, run, "cache reset before the block: POST /reset_prefix_cache: 400 Bad Request: ")
		check(t, run, "prefix cache not reset: 1 request is running or waiting")
		cancel()
		<-hung
	})
}

// TestCacheStartUnknownWithoutCounter: with no reset and no prefix-cache query
// counter under the target's metric name, the block cannot tell where its cache
// state came from and says "unknown"; the reuse it observed then comes from
// usage.cached_tokens alone.
func TestCacheStartUnknownWithoutCounter(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{requests: 4, targetAttrs: map[string]cty.Value{
		"prefix_cache_queries_metric": cty.StringVal("rigor_test:no_such_counter"),
	}})
	if run.res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s) %s", run.res.Status, run.res.Class, run.res.Message)
	}
	cs := run.block.Cache
	if cs.Start.State != block.StartUnknown || cs.Start.QueriesBefore != nil || cs.Observed.Source != "cached_tokens" || cs.Observed.Native != nil {
		t.Errorf("start %q (queries before %v), observed from %q (native %v); want unknown, none, cached_tokens, none",
			cs.Start.State, cs.Start.QueriesBefore, cs.Observed.Source, cs.Observed.Native)
	}
}
