package block_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// blockRun is one block step run against a simulator on loopback.
type blockRun struct {
	res      engine.Result
	dir      string
	records  []loadgen.Record
	result   *loadgen.Result
	block    blockSections
	config   cty.Value
	progress []engine.Progress
}

// blockSections is what the block step adds to result.json, read back as a
// reviewer would.
type blockSections struct {
	Corpus struct {
		Key, Workload, SHA256, PinnedSHA256 string
		RequestIDPrefix                     string `json:"request_id_prefix"`
		Requests                            int
		ID                                  struct {
			Cell, Lane string
			Seed       int64
			Repetition int
		}
	}
	Cache struct {
		Expected     string
		ExpectedFrom string `json:"expected_from"`
		Start        struct {
			State         string
			QueriesBefore *float64 `json:"prefix_cache_queries_before"`
			Reset         *struct {
				Path   string
				Status int
			}
			CarriedFrom *struct{ Addr, Arm string } `json:"carried_from"`
			Inherited   bool                        `json:"inherited_from_other_arm"`
		}
		Observed struct {
			Source       string
			Fraction     *float64
			CachedTokens *struct{ Fraction float64 } `json:"cached_tokens"`
			Native       *struct{ Fraction float64 }
		}
		Contradiction *string
	}
	Rigor          string
	NativeCounters *promscrape.Deltas `json:"native_counters"`
	Engine         string
	Model          string
}

// blockOpts shape a test block.
type blockOpts struct {
	concurrency, requests, repetition int
	corpus, prefixes                  string
	fresh                             bool
	maxTokens                         int
	effort                            string
	requestTimeout                    string
	timeout                           time.Duration
	gates                             []cty.Value
	// The corpus protocol: phase, primed, expect_cache, reset_cache, corpus_seed.
	phase, expect string
	primed, reset bool
	corpusSeed    *int64
	arm           string
	targetAttrs   map[string]cty.Value // engine, cache_reset, container...
	attempt       int
	history       []engine.Ended
	addr          string
	instCell, key string
	cancelled     bool // run with a context cancelled before the block starts
	// workload attributes beside the defaults (the fixed-output fixture's)
	workloadAttrs map[string]cty.Value
	agents        []string // tcp:// URLs of `rigor agent` processes
}

func startSim(t *testing.T, cfg sim.Config) *sim.Running {
	t.Helper()
	if cfg.Profile == (sim.Profile{}) {
		cfg.Profile, _ = sim.LookupProfile("incumbent")
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 0.002
	}
	rn, err := sim.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	return rn
}

// runSimBlock runs the block step, as the engine would, against rn.
func runSimBlock(t *testing.T, rn *sim.Running, o blockOpts) blockRun {
	t.Helper()
	if o.concurrency == 0 {
		o.concurrency = 4
	}
	if o.requests == 0 {
		o.requests = 12
	}
	if o.corpus == "" {
		o.corpus = "synthetic-summary"
	}
	if o.prefixes == "" {
		o.prefixes = "unique"
	}
	if o.maxTokens == 0 {
		o.maxTokens = 128
	}
	if o.effort == "" {
		o.effort = "low"
	}
	if o.timeout == 0 {
		o.timeout = 30 * time.Second
	}
	if o.attempt == 0 {
		o.attempt = 1
	}
	if o.addr == "" {
		o.addr = "block.t"
	}
	tattrs := map[string]cty.Value{
		"name":      cty.StringVal("sim"),
		"host":      cty.StringVal("blocktest"),
		"container": cty.StringVal("blocktest-none"),
		"endpoint":  cty.StringVal(rn.URL()),
		"image":     cty.StringVal("sim:incumbent"),
	}
	for k, v := range o.targetAttrs {
		tattrs[k] = v
	}
	wattrs := map[string]cty.Value{
		"name":             cty.StringVal("capacity"),
		"corpus":           cty.StringVal(o.corpus),
		"corpus_seed":      cty.NumberIntVal(7),
		"nominal_context":  cty.NumberIntVal(512),
		"prefixes":         cty.StringVal(o.prefixes),
		"fresh_prefixes":   cty.BoolVal(o.fresh),
		"max_tokens":       cty.NumberIntVal(int64(o.maxTokens)),
		"reasoning_effort": cty.StringVal(o.effort),
	}
	for k, v := range o.workloadAttrs {
		wattrs[k] = v
	}
	wl := cty.ObjectVal(wattrs)
	attrs := map[string]cty.Value{
		"target": cty.ObjectVal(tattrs), "workload": wl,
		"concurrency": cty.NumberIntVal(int64(o.concurrency)),
		"requests":    cty.NumberIntVal(int64(o.requests)),
		"repetition":  cty.NumberIntVal(int64(o.repetition)),
		"primed":      cty.BoolVal(o.primed),
		"reset_cache": cty.BoolVal(o.reset),
	}
	if o.phase != "" {
		attrs["phase"] = cty.StringVal(o.phase)
	}
	if o.expect != "" {
		attrs["expect_cache"] = cty.StringVal(o.expect)
	}
	if o.corpusSeed != nil {
		attrs["corpus_seed"] = cty.NumberIntVal(*o.corpusSeed)
	}
	if o.arm != "" {
		attrs["arm"] = cty.StringVal(o.arm)
	}
	if o.requestTimeout != "" {
		attrs["request_timeout"] = cty.StringVal(o.requestTimeout)
	}
	if len(o.gates) > 0 {
		attrs["gates"] = cty.TupleVal(o.gates)
	}
	if len(o.agents) > 0 {
		var urls []cty.Value
		for _, a := range o.agents {
			urls = append(urls, cty.StringVal(a))
		}
		attrs["agents"] = cty.ListVal(urls)
	}
	// Every attribute of the schema is present, null when unset, as after decoding.
	for name, s := range (block.Step{}).Spec() {
		if _, ok := attrs[name]; !ok {
			attrs[name] = cty.NullVal(hcldec.ImpliedType(s))
		}
	}
	dir := t.TempDir()
	var mu sync.Mutex
	var run blockRun
	sc := &engine.StepContext{
		Addr: o.addr,
		Instance: &plans.Instance{Addr: o.addr, Type: "block", Name: "t", Meta: plans.Meta{Timeout: o.timeout, Phase: o.phase},
			Arm: o.arm, Cell: o.instCell, Key: o.key, Keyed: o.key != ""},
		Config: cty.ObjectVal(attrs), Campaign: "blocktest", Attempt: o.attempt, Dir: dir, Log: zerolog.Nop(), Rigor: testRigor,
		Progress: func(p engine.Progress) { mu.Lock(); run.progress = append(run.progress, p); mu.Unlock() },
		History:  func() []engine.Ended { return o.history },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if o.cancelled {
		cancel()
	}
	run.res = block.Step{}.Run(ctx, sc)
	run.dir = dir
	if f, err := os.Open(filepath.Join(dir, "requests.jsonl")); err == nil {
		run.records, err = loadgen.ReadRecords(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "result.json")); err == nil {
		run.result = &loadgen.Result{}
		if err := json.Unmarshal(b, run.result); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &run.block); err != nil {
			t.Fatal(err)
		}
	}
	run.config = sc.Config
	return run
}

// checkEvidence validates result.json and every requests.jsonl line against their
// schemas and checks the accounting identity.
func checkEvidence(t *testing.T, run blockRun, requests int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run.dir, "result.json"))
	if err != nil {
		t.Fatalf("result.json: %v", err)
	}
	if err := schemas.Validate("result", b); err != nil {
		t.Errorf("result.json: %v", err)
	}
	f, err := os.Open(filepath.Join(run.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		if err := schemas.Validate("request-record", sc.Bytes()); err != nil {
			t.Errorf("requests.jsonl line %d: %v", lines, err)
		}
	}
	if lines != requests || len(run.records) != requests {
		t.Errorf("requests.jsonl has %d lines, want %d", lines, requests)
	}
	sum := 0
	for _, n := range run.result.Outcomes {
		sum += n
	}
	if sum != requests || run.result.Requests != requests {
		t.Errorf("outcomes %v sum to %d (requests %d), want %d", run.result.Outcomes, sum, run.result.Requests, requests)
	}
}

func readDeltas(t *testing.T, dir string) promscrape.Deltas {
	t.Helper()
	var d promscrape.Deltas
	b, err := os.ReadFile(filepath.Join(dir, "native-deltas.json"))
	if err != nil {
		t.Fatalf("native-deltas.json: %v", err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// usageSums adds up what the records' usage says.
func usageSums(recs []loadgen.Record) (prompt, completion, cached int) {
	for _, r := range recs {
		if r.Usage != nil {
			prompt += r.Usage.PromptTokens
			completion += r.Usage.CompletionTokens
			if r.Usage.CachedTokens != nil {
				cached += *r.Usage.CachedTokens
			}
		}
	}
	return
}

func idleGate() cty.Value {
	return cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("before_block"), "idle": cty.True, "health": cty.True})
}

// testRigor stands for the build the engine hands every step (StepContext.Rigor).
const testRigor = "v9.9.9 (0123456789ab, modified)"

func TestBlockHealthy(t *testing.T) {
	rn := startSim(t, sim.Config{})
	run := runSimBlock(t, rn, blockOpts{requests: 12, gates: []cty.Value{idleGate()}})
	if run.res.Status != engine.StatusSucceeded {
		t.Fatalf("status %s class %s: %s", run.res.Status, run.res.Class, run.res.Message)
	}
	for _, name := range []string{"requests.jsonl", "result.json", "native-before.prom", "native-after.prom", "native-deltas.json", "gates.json"} {
		if _, err := os.Stat(filepath.Join(run.dir, name)); err != nil {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	checkEvidence(t, run, 12)
	if run.block.Rigor != testRigor {
		t.Errorf("result.json names rigor %q, want the StepContext's %q", run.block.Rigor, testRigor)
	}
	if run.result.Outcomes[loadgen.OK] != 12 {
		t.Errorf("outcomes %v, want 12 ok", run.result.Outcomes)
	}
	// The native counters moved by exactly what the client's usage chunks say.
	d := readDeltas(t, run.dir)
	prompt, completion, cached := usageSums(run.records)
	if int(d.PromptTokens) != prompt || int(d.GenerationTokens) != completion {
		t.Errorf("native prompt/generation deltas %v/%v, usage sums %d/%d", d.PromptTokens, d.GenerationTokens, prompt, completion)
	}
	if int(d.PrefixQueries) != prompt || int(d.PrefixHits) != cached {
		t.Errorf("prefix cache deltas queries %v hits %v, usage prompt %d cached %d", d.PrefixQueries, d.PrefixHits, prompt, cached)
	}
	var finished float64
	for _, v := range d.RequestSuccess {
		finished += v
	}
	if finished != 12 {
		t.Errorf("request_success deltas %v sum to %v, want 12", d.RequestSuccess, finished)
	}
	// IDs are <campaign>/<step>/<cell>/<rep>/<index>.
	for _, r := range run.records {
		if want := fmt.Sprintf("blocktest/block.t/c4/r0/%d", r.Index); r.ID != want {
			t.Errorf("request ID %q, want %q", r.ID, want)
		}
	}
	// Live progress reached the end, counting every request.
	if n := len(run.progress); n == 0 {
		t.Fatal("no progress reported")
	} else if last := run.progress[n-1]; last.Done != 12 || last.Total != 12 || last.Failed != 0 || !strings.HasSuffix(last.Rate, "tok/s") {
		t.Errorf("last progress %+v", last)
	}
}

func TestBlockReasoningExhaustionIsRecordClass(t *testing.T) {
	rn := startSim(t, sim.Config{Faults: sim.Faults{ReasoningExhaustionRate: 1}})
	run := runSimBlock(t, rn, blockOpts{requests: 8, maxTokens: 32})
	if run.res.Status != engine.StatusFailed || run.res.Class != engine.ClassRecord {
		t.Fatalf("status %s class %s, want failed/record: %s", run.res.Status, run.res.Class, run.res.Message)
	}
	checkEvidence(t, run, 8)
	r := run.result
	if r.Outcomes[loadgen.NoVisibleOutput] != 8 || r.VisibleSuccesses != 0 || r.VisibleSuccessRate != 0 || r.Failures.Requests != 8 {
		t.Errorf("outcomes %v, visible %d/%d: the failures must stay in the denominator", r.Outcomes, r.VisibleSuccesses, r.Requests)
	}
	for _, rec := range run.records {
		if rec.TTFOAtMS == nil || rec.TTFTVisibleAtMS != nil || rec.FinishReason == nil || *rec.FinishReason != "length" {
			t.Errorf("record %s: want reasoning output (TTFO) without a visible token and finish length", rec.ID)
			break
		}
	}
	// Reasoning-only generation still counts in the aggregate throughput.
	if r.AggregateOutputTokS <= 0 {
		t.Errorf("aggregate output %v tok/s", r.AggregateOutputTokS)
	}
}

func TestBlockOmittedUsageIsMissingTerminalMetadata(t *testing.T) {
	rn := startSim(t, sim.Config{Faults: sim.Faults{OmitUsageRate: 1}})
	run := runSimBlock(t, rn, blockOpts{requests: 6})
	if run.res.Class != engine.ClassMissingTerminal {
		t.Fatalf("class %s, want %s: %s", run.res.Class, engine.ClassMissingTerminal, run.res.Message)
	}
	checkEvidence(t, run, 6)
	if run.result.Outcomes[loadgen.MissingTerminalMetadata] != 6 {
		t.Errorf("outcomes %v", run.result.Outcomes)
	}
}

// hangOne sends one request to a simulator that hangs every request and waits until
// it runs; cancelling the returned context ends it.
func hangOne(t *testing.T, rn *sim.Running) (cancel context.CancelFunc, hung <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"model":"glm53-nvidia-fp4-local-tp2-327k-c4-mtp3-r2","stream":true,"max_tokens":16,"messages":[{"role":"user","content":"hang please"}]}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rn.URL()+"/v1/chat/completions", strings.NewReader(body))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for rn.Server().Stats().Running != 1 {
		if time.Now().After(deadline) {
			cancel()
			t.Fatal("the hung request never started running")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return cancel, done
}

func TestBlockIdleGateFailsWithHungRequestInFlight(t *testing.T) {
	rn := startSim(t, sim.Config{Faults: sim.Faults{HangRate: 1, HangAfter: 2}})
	cancel, hung := hangOne(t, rn)
	defer cancel()
	run := runSimBlock(t, rn, blockOpts{gates: []cty.Value{idleGate()}})
	if run.res.Status != engine.StatusFailed || run.res.Class != engine.ClassGate {
		t.Fatalf("status %s class %s, want failed/gate: %s", run.res.Status, run.res.Class, run.res.Message)
	}
	if !strings.Contains(run.res.Message, "1 running") {
		t.Errorf("message %q does not say what was running", run.res.Message)
	}
	if _, err := os.Stat(filepath.Join(run.dir, "requests.jsonl")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a gated block sent requests (requests.jsonl: %v)", err)
	}
	b, _ := os.ReadFile(filepath.Join(run.dir, "gates.json"))
	if !bytes.Contains(b, []byte(`"ok": false`)) {
		t.Errorf("gates.json does not record the failed check: %s", b)
	}
	cancel()
	<-hung
}

func TestBlockTinyTimeoutIsIncomplete(t *testing.T) {
	rn := startSim(t, sim.Config{TimeScale: 1}) // ~0.1 s prefill per request, real time
	run := runSimBlock(t, rn, blockOpts{requests: 8, concurrency: 2, timeout: 40 * time.Millisecond})
	if run.res.Class != engine.ClassIncomplete {
		t.Fatalf("class %s, want incomplete: %s", run.res.Class, run.res.Message)
	}
	checkEvidence(t, run, 8)
	if !run.result.Incomplete || run.result.Outcomes[loadgen.Cancelled] != 8 {
		t.Errorf("incomplete %v outcomes %v: every request was cut by the bound", run.result.Incomplete, run.result.Outcomes)
	}
}

// TestBlockOutcomesSumAcrossFaults injects every fault the simulator has, alone and
// all together, and holds the accounting identity and the class of the block.
func TestBlockOutcomesSumAcrossFaults(t *testing.T) {
	cases := map[string]struct {
		faults  sim.Faults
		expect  loadgen.Outcome
		class   engine.FailureClass
		timeout string
	}{
		"http 503":             {sim.Faults{HTTPErrorRate: 0.5, HTTPErrorStatus: 503}, loadgen.HTTPError, engine.ClassRecord, ""},
		"stream cut":           {sim.Faults{StreamCutRate: 0.5, StreamCutAfter: 3}, loadgen.StreamError, engine.ClassRecord, ""},
		"in-band error":        {sim.Faults{InbandErrorRate: 0.5, InbandErrorAfter: 2}, loadgen.StreamError, engine.ClassRecord, ""},
		"hang":                 {sim.Faults{HangRate: 0.5, HangAfter: 1}, loadgen.Timeout, engine.ClassRecord, "300ms"},
		"reasoning exhaustion": {sim.Faults{ReasoningExhaustionRate: 0.5}, loadgen.NoVisibleOutput, engine.ClassRecord, ""},
		"omitted usage":        {sim.Faults{OmitUsageRate: 0.5}, loadgen.MissingTerminalMetadata, engine.ClassMissingTerminal, ""},
		"slowdown":             {sim.Faults{Slowdown: 3}, loadgen.OK, "", ""},
		"finish_reason abort":  {sim.Faults{AbortRate: 0.5, AbortAfter: 3}, loadgen.StreamError, engine.ClassRecord, ""},
		"everything": {sim.Faults{HTTPErrorRate: 0.15, StreamCutRate: 0.15, StreamCutAfter: 2, InbandErrorRate: 0.15, HangRate: 0.15,
			ReasoningExhaustionRate: 0.15, OmitUsageRate: 0.15, Slowdown: 1.5}, "", engine.ClassMissingTerminal, "300ms"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rn := startSim(t, sim.Config{Faults: tc.faults, Seed: 4})
			const n = 24
			run := runSimBlock(t, rn, blockOpts{requests: n, requestTimeout: tc.timeout})
			if run.result == nil {
				t.Fatalf("no result.json: %s %s", run.res.Class, run.res.Message)
			}
			checkEvidence(t, run, n)
			t.Logf("outcomes %v, class %q", run.result.Outcomes, run.res.Class)
			if run.res.Class != tc.class {
				t.Errorf("class %q, want %q (%s)", run.res.Class, tc.class, run.res.Message)
			}
			if tc.expect != "" && run.result.Outcomes[tc.expect] == 0 {
				t.Errorf("no %s among %v", tc.expect, run.result.Outcomes)
			}
			// An aborted stream streamed 3 tokens and reported usage: they are counted
			// apart from the aggregate, exactly, not dropped.
			if name == "finish_reason abort" {
				n := run.result.Outcomes[loadgen.StreamError]
				if run.result.FailedOutputTokens != 3*n || run.result.FailedOutputTokensFromChunks != 0 || run.result.FailedOutputTokS <= 0 {
					t.Errorf("failed output %d tokens (%d from chunks) over %d aborted streams, want %d from usage",
						run.result.FailedOutputTokens, run.result.FailedOutputTokensFromChunks, n, 3*n)
				}
			}
			if name == "everything" {
				kinds := 0
				for _, c := range run.result.Outcomes {
					if c > 0 {
						kinds++
					}
				}
				if kinds < 5 {
					t.Errorf("only %d outcome classes seen among %v", kinds, run.result.Outcomes)
				}
			}
		})
	}
}
