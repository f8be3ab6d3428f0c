package block

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/agent"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/rigor-bench/rigor/steps/vocab"
	"github.com/zclconf/go-cty/cty"
)

// Step runs one benchmark block.
type Step struct{}

var _ engine.Step = Step{}
var _ plans.VocabularyProvider = Step{}
var _ engine.DefaultTimeout = Step{}

var spec = hcldec.ObjectSpec{
	"target":          &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
	"workload":        &hcldec.AttrSpec{Name: "workload", Type: cty.DynamicPseudoType, Required: true},
	"concurrency":     &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "concurrency", Type: cty.Number, Required: true}, Func: plans.WholeBetween("concurrency", 1, loadgen.MaxRunConcurrency)},
	"requests":        &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "requests", Type: cty.Number, Required: true}, Func: plans.WholeBetween("requests", 1, loadgen.MaxRequests)},
	"repetition":      &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "repetition", Type: cty.Number}, Func: plans.WholeAtLeast("repetition", 0)},
	"arm":             &hcldec.AttrSpec{Name: "arm", Type: cty.String},
	"cell":            &hcldec.AttrSpec{Name: "cell", Type: cty.String},
	"gates":           &hcldec.AttrSpec{Name: "gates", Type: cty.DynamicPseudoType},
	"mode":            &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "mode", Type: cty.String}, Func: plans.OneOf("mode", loadgen.Modes())},
	"rate":            &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "rate", Type: cty.Number}, Func: plans.Above("rate", 0)},
	"request_timeout": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "request_timeout", Type: cty.String}, Func: plans.PositiveDuration("request_timeout", 0, "5m")},
	"native_interval": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "native_interval", Type: cty.String}, Func: plans.PositiveDuration("native_interval", 0, "1s")},
	// The corpus protocol (see corpus.go and cache.go). corpus_seed replaces the
	// workload's; phase is the meta-argument, passed by the language; primed says an
	// earlier block of the arm's cell sent this corpus; expect_cache declares the
	// cache state instead of deriving it; reset_cache empties the target's prefix
	// cache (its cache_reset call) before anything is sent.
	"corpus_seed":  &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "corpus_seed", Type: cty.Number}, Func: plans.WholeAtLeast("corpus_seed", 0)},
	"phase":        &hcldec.AttrSpec{Name: "phase", Type: cty.String},
	"primed":       &hcldec.AttrSpec{Name: "primed", Type: cty.Bool},
	"expect_cache": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "expect_cache", Type: cty.String}, Func: plans.OneOf("expect_cache", plans.CacheStates)},
	"reset_cache":  &hcldec.AttrSpec{Name: "reset_cache", Type: cty.Bool},
	// agents, when set, sends the block from these `rigor agent` processes
	// (tcp://HOST:PORT), the step staying the one timing authority (package agent).
	"agents": &hcldec.AttrSpec{Name: "agents", Type: cty.List(cty.String)},
}

// MatrixArguments: cell names the matrix cell a matrix's block runs in (the report
// reads it from the plan); a step block has no cell.
func (Step) MatrixArguments() []string { return []string{"cell"} }

// Outputs of a block: what a freeze step or a report derives from, and the identity
// it measured (identityOutputs, identity.go), which the next block is held to.
var outputType = cty.Object(mergeTypes(map[string]cty.Type{
	"concurrency":            cty.Number,
	"requests":               cty.Number,
	"succeeded":              cty.Number,
	"failed":                 cty.Number,
	"elapsed_s":              cty.Number,
	"seconds_per_request":    cty.Number,
	"aggregate_output_tok_s": cty.Number,
	// Where the block ran, so a later block on the same container can say whose
	// cache it carried over.
	"arm":       cty.String,
	"container": cty.String,
}, identityOutputs))

// DataReferences says which arguments name data blocks, so plan validate refuses
// a string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{
		"target":   {Kind: "target"},
		"workload": {Kind: "workload"},
		"gates":    {Kind: "gate", List: true},
	}
}

// Spec is the schema of a block step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// Vocabulary is what the step knows of the data blocks it reads (targets, their
// hosts, workloads, gates), so the language checks their values at validate time.
func (Step) Vocabulary() plans.Vocabulary { return vocab.Vocabulary() }

// OutputType lists the block's outputs.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout is seed 001's hard bound per block.
func (Step) DefaultTimeout() time.Duration { return 600 * time.Second }

// blockResult is result.json: the loadgen figures, and what the block step adds: the
// corpus it sent, the cache state it expected and saw, and the native counters.
type blockResult struct {
	*loadgen.Result
	Corpus corpusInfo         `json:"corpus"`
	Cache  cacheInfo          `json:"cache"`
	Native *promscrape.Deltas `json:"native_counters"`
	Names  promscrape.Names   `json:"native_names"`
	Engine string             `json:"engine"`
	// Model is the model name every request of the block sent, so a report can say
	// what was compared without re-deriving it from a profile.
	Model  string        `json:"model"`
	Agents *agent.Report `json:"agents,omitempty"`
	// Rigor is the version and commit of the rigor that ran the block
	// (engine.StepContext.Rigor), so a result read on its own names its build.
	Rigor string `json:"rigor,omitempty"`
}

// loadClient sends a block's requests: loadgen.Run in this process, or an
// agent.Fleet. The Report is nil for the local client.
type loadClient interface {
	Run(ctx context.Context, cfg loadgen.Config, out io.Writer) (*loadgen.Result, *agent.Report, error)
}

type localClient struct{}

func (localClient) Run(ctx context.Context, cfg loadgen.Config, out io.Writer) (*loadgen.Result, *agent.Report, error) {
	res, err := loadgen.Run(ctx, cfg, out)
	return res, nil, err
}

// fleetLimits are the limits agents are held to (zero: the agent package's
// defaults). Tests whose agents share one process with the simulator raise the CPU
// share, since that process's CPU is then not the agents' alone.
var fleetLimits agent.Limits

// clientOf is the block's client: its agents when it names any.
func clientOf(cfg cty.Value) (loadClient, error) {
	v, _ := attrOf(cfg, "agents").UnmarkDeep()
	if v.IsNull() || !v.IsKnown() || v.LengthInt() == 0 {
		return localClient{}, nil
	}
	var urls []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if e.IsNull() {
			return nil, fmt.Errorf("agents: a null address")
		}
		if _, err := agent.ParseURL(e.AsString()); err != nil {
			return nil, fmt.Errorf("agents: %v", err)
		}
		urls = append(urls, e.AsString())
	}
	return &agent.Fleet{Agents: urls, Limits: fleetLimits}, nil
}

// Run executes the block.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	cfg := sc.Config
	t, err := target.FromValue(cfg.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	lc, key, err := loadConfig(sc, t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	lc.IdentityHeader = t.IdentityHeader
	client, err := clientOf(cfg)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	expected, expectedFrom := expectedCache(cfg, lc.Workload)
	if err := validCacheState(expected); err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	// Render the corpus before anything touches the target: its digest is evidence,
	// and a corpus that cannot be rendered must not cost a gate or a reset.
	digest, err := corpus.Digest(lc.CorpusID(), lc.Requests)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	if target.Bool(cfg, "reset_cache") && t.CacheReset == "" {
		return engine.Failed(engine.ClassConfig, "reset_cache: target %s declares no cache_reset call (e.g. cache_reset = \"/reset_prefix_cache\")", t.Name)
	}
	gates := gateList(cfg.GetAttr("gates"))
	before, res := checkGates(ctx, sc, t, gates)
	if res != nil {
		return *res
	}
	gpu, res := startGPU(ctx, sc, cfg, gates)
	if res != nil {
		return *res
	}
	// The reset comes after every gate (a reset under load is refused) and before the
	// native scrape, so the counters before the block are the reset server's.
	var reset *resetCall
	if target.Bool(cfg, "reset_cache") {
		rc, err := resetCache(ctx, t)
		if err != nil {
			_ = gpu.finish()
			return engine.Failed(engine.ClassGate, "cache reset before the block: %v", err)
		}
		reset = rc
	}
	if snap, err := promscrape.Scrape(ctx, t.Metrics); err == nil {
		_ = keepScrape(sc, "native-before.prom", snap.Raw)
		before.metrics = snap
	} else {
		sc.Log.Warn().Err(err).Msg("native metrics unavailable before the block")
	}
	start := cacheStartOf(sc, t, reset, before.metrics)
	out, err := os.Create(sc.Path("requests.jsonl"))
	if err != nil {
		return engine.Failed(engine.ClassInternal, "create requests.jsonl: %v", err)
	}
	lc.OnRecord = progressHook(sc, lc.Requests)
	interval := defaultNativeInterval
	if s := target.Str(cfg, "native_interval"); s != "" {
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			interval = d
		}
	}
	stopNative := sampleNative(sc.Path("native-samples.jsonl"), t, interval, sc.Redact)
	var records []loadgen.Record
	onRecord := lc.OnRecord
	lc.OnRecord = func(r loadgen.Record) {
		records = append(records, r) // calls never overlap (loadgen.Config.OnRecord)
		if onRecord != nil {
			onRecord(r)
		}
	}
	if sc.Progress != nil {
		// A capture running during this block counts its start from the first
		// request, after the corpus is rendered and the connections dialled.
		lc.OnStart = func() { sc.Progress(engine.Progress{Total: lc.Requests, Sending: true}) }
	}
	result, agents, runErr := client.Run(ctx, lc, out)
	stopNative()
	_ = out.Sync()
	out.Close()
	if runErr != nil && result == nil {
		// Stop sampling before the engine hashes the artefacts.
		_ = gpu.finish()
		if ctx.Err() != nil {
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "block cancelled before its first request: " + runErr.Error()}
		}
		if errors.Is(runErr, agent.ErrAgent) {
			return engine.Failed(engine.ClassAgent, "block could not start, nothing was sent: %v", runErr)
		}
		if errors.Is(runErr, loadgen.ErrWarmup) {
			// Nothing was sent: the target did not accept a connection.
			return engine.Failed(engine.ClassHealth, "block could not run: %v", runErr)
		}
		return engine.Failed(engine.ClassConfig, "block could not run: %v", runErr)
	}
	gpuRes := gpu.finish()
	after := afterBlock(sc, t, before)
	if after == nil {
		after = gpuRes
	}
	br := blockResult{Result: result, Engine: t.Engine, Model: lc.Model, Names: t.Native, Agents: agents, Rigor: sc.Rigor}
	br.Native = nativeDeltas(sc, t, before.metrics)
	br.Corpus = corpusInfo{Key: key, Workload: workloadName(cfg), ID: lc.CorpusID(), Requests: lc.Requests, SHA256: digest,
		PinnedSHA256: sc.Pinned[key], RequestIDPrefix: lc.IDPrefix}
	br.Cache = cacheInfo{Expected: expected, ExpectedFrom: expectedFrom, Start: start, Observed: observe(records, br.Native, t.Native)}
	if c := contradiction(expected, br.Cache.Observed); c != "" {
		br.Cache.Contradiction = &c
		sc.Log.Warn().Str("cache", c).Msg("the cache state contradicts the plan")
	}
	if err := writeJSON(sc.Path("result.json"), br); err != nil {
		return engine.Failed(engine.ClassInternal, "write result.json: %v", err)
	}
	outputs := withIdentity(outputsOf(result, target.Str(cfg, "arm"), t.Container), before)
	failed := result.Requests - result.Outcomes[loadgen.OK]
	// Rounded for the log line (result.json keeps every digit): tok_s=3338 wall_s=1.94.
	sc.Log.Info().Int("ok", result.Outcomes[loadgen.OK]).Int("failed", failed).
		Int("tok_s", int(math.Round(result.AggregateOutputTokS))).Float64("wall_s", math.Round(result.WallS*100)/100).Msg("block finished")
	switch {
	case ctx.Err() != nil && !result.Incomplete:
		return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "block cancelled", Outputs: outputs}
	case ctx.Err() == nil && errors.Is(runErr, agent.ErrAgent):
		return engine.FailedWith(engine.ClassAgent, outputs, "%v; every record received is kept in requests.jsonl (result.json: agents)", runErr)
	case result.Incomplete:
		if ctx.Err() == context.Canceled {
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "block cancelled; every record taken so far is kept", Outputs: outputs}
		}
		return engine.FailedWith(engine.ClassIncomplete, outputs, "block incomplete: %d of %d requests cancelled at the hard bound; every record taken so far is kept", result.Outcomes[loadgen.Cancelled], result.Requests)
	case after != nil:
		// Requests were sent: the outputs say where, for the next block's cache
		// accounting, whatever failed after them.
		r := *after
		r.Outputs = outputs
		return r
	case result.Outcomes[loadgen.MissingTerminalMetadata] > 0:
		return engine.FailedWith(engine.ClassMissingTerminal, outputs, "%d request(s) ended without usage or finish_reason", result.Outcomes[loadgen.MissingTerminalMetadata])
	case failed > 0:
		return engine.FailedWith(engine.ClassRecord, outputs, "%d of %d requests failed (%s); they stay in the denominator and the cell is ineligible for ranking", failed, result.Requests, outcomeSummary(result))
	}
	return engine.Succeeded(outputs)
}

func outcomeSummary(r *loadgen.Result) string {
	var parts []string
	for _, o := range loadgen.Outcomes() {
		if o != loadgen.OK && r.Outcomes[o] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, r.Outcomes[o]))
		}
	}
	return strings.Join(parts, ", ")
}

func outputsOf(r *loadgen.Result, arm, container string) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"arm":                    cty.StringVal(arm),
		"container":              cty.StringVal(container),
		"concurrency":            cty.NumberIntVal(int64(r.Concurrency)),
		"requests":               cty.NumberIntVal(int64(r.Requests)),
		"succeeded":              cty.NumberIntVal(int64(r.Outcomes[loadgen.OK])),
		"failed":                 cty.NumberIntVal(int64(r.Requests - r.Outcomes[loadgen.OK])),
		"elapsed_s":              cty.NumberFloatVal(r.WallS),
		"seconds_per_request":    cty.NumberFloatVal(r.SecondsPerRequest),
		"aggregate_output_tok_s": cty.NumberFloatVal(r.AggregateOutputTokS),
	})
}

// progressHook reports the block's live progress (requests done and failed, output
// rate) through sc.Progress, at most every 100 ms and always for the last request.
func progressHook(sc *engine.StepContext, total int) func(loadgen.Record) {
	if sc.Progress == nil {
		return nil
	}
	tally := loadgen.NewTally(total)
	return func(r loadgen.Record) {
		if tally.Add(r) {
			sc.Progress(engine.Progress{Done: tally.Done, Failed: tally.Failed, Total: tally.Total, Rate: tally.Rate()})
		}
	}
}

// loadConfig is the loadgen configuration of the block and its corpus key.
func loadConfig(sc *engine.StepContext, t target.Target) (loadgen.Config, string, error) {
	cfg := sc.Config
	lc, key, err := corpusPlan(cfg)
	if err != nil {
		return lc, key, err
	}
	if err := fixedOutput(&lc.Workload, attrOf(cfg, "workload")); err != nil {
		return lc, key, err
	}
	lc.Endpoint, lc.Model, lc.APIKey = t.Endpoint, t.ServedModel(), loadgen.Secret(t.APIKey)
	lc.API = target.Str(attrOf(cfg, "workload"), "api")
	lc.Mode, lc.Rate = target.Str(cfg, "mode"), target.Num(cfg, "rate", 0)
	lc.IDPrefix = requestIDPrefix(sc, lc.Concurrency, lc.Repetition)
	lc.Timeout = (Step{}).DefaultTimeout()
	if d := sc.Instance.Meta.Timeout; d > 0 {
		lc.Timeout = d
	}
	if s := target.Str(cfg, "request_timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return lc, key, fmt.Errorf("request_timeout: %v", err)
		}
		lc.RequestTimeout = d
	}
	return lc, key, lc.Validate()
}

func workloadName(cfg cty.Value) string {
	_, name, _ := workloadOf(cfg)
	return name
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
