package block

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step runs one benchmark block.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}

var spec = hcldec.ObjectSpec{
	"target":          &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType, Required: true},
	"workload":        &hcldec.AttrSpec{Name: "workload", Type: cty.DynamicPseudoType, Required: true},
	"concurrency":     &hcldec.AttrSpec{Name: "concurrency", Type: cty.Number, Required: true},
	"requests":        &hcldec.AttrSpec{Name: "requests", Type: cty.Number, Required: true},
	"repetition":      &hcldec.AttrSpec{Name: "repetition", Type: cty.Number},
	"arm":             &hcldec.AttrSpec{Name: "arm", Type: cty.String},
	"cell":            &hcldec.AttrSpec{Name: "cell", Type: cty.String},
	"gates":           &hcldec.AttrSpec{Name: "gates", Type: cty.DynamicPseudoType},
	"mode":            &hcldec.AttrSpec{Name: "mode", Type: cty.String},
	"rate":            &hcldec.AttrSpec{Name: "rate", Type: cty.Number},
	"request_timeout": &hcldec.AttrSpec{Name: "request_timeout", Type: cty.String},
	"native_interval": &hcldec.AttrSpec{Name: "native_interval", Type: cty.String},
}

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
}, identityOutputs))

// Spec is the schema of a block step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType lists the block's outputs.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout is seed 001's hard bound per block.
func (Step) DefaultTimeout() time.Duration { return 600 * time.Second }

// Run executes the block.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	cfg := sc.Config
	t, err := target.FromValue(cfg.GetAttr("target"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	lc, err := loadConfig(sc, t)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	lc.IdentityHeader = t.IdentityHeader
	gates := gateList(cfg.GetAttr("gates"))
	before, res := checkGates(ctx, sc, t, gates)
	if res != nil {
		return *res
	}
	gpu, res := startGPU(ctx, sc, cfg, gates)
	if res != nil {
		return *res
	}
	if snap, err := promscrape.Scrape(ctx, t.Metrics); err == nil {
		_ = os.WriteFile(sc.Path("native-before.prom"), snap.Raw, 0o644)
		before.metrics = snap
	} else {
		sc.Log.Warn().Err(err).Msg("native metrics unavailable before the block")
	}
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
	stopNative := sampleNative(sc.Path("native-samples.jsonl"), t, interval)
	result, runErr := loadgen.Run(ctx, lc, out)
	stopNative()
	_ = out.Sync()
	out.Close()
	if runErr != nil && result == nil {
		// Stop sampling before the engine hashes the artefacts.
		_ = gpu.finish()
		return engine.Failed(engine.ClassConfig, "block could not run: %v", runErr)
	}
	if err := writeJSON(sc.Path("result.json"), result); err != nil {
		return engine.Failed(engine.ClassInternal, "write result.json: %v", err)
	}
	gpuRes := gpu.finish()
	after := afterBlock(sc, t, before)
	if after == nil {
		after = gpuRes
	}
	outputs := withIdentity(outputsOf(result), before)
	failed := result.Requests - result.Outcomes[loadgen.OK]
	sc.Log.Info().Int("ok", result.Outcomes[loadgen.OK]).Int("failed", failed).
		Float64("tok_s", result.AggregateOutputTokS).Float64("wall_s", result.WallS).Msg("block finished")
	switch {
	case ctx.Err() != nil && !result.Incomplete:
		return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "block cancelled", Outputs: outputs}
	case result.Incomplete:
		if ctx.Err() == context.Canceled {
			return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "block cancelled; every record taken so far is kept", Outputs: outputs}
		}
		return engine.FailedWith(engine.ClassIncomplete, outputs, "block incomplete: %d of %d requests cancelled at the hard bound; every record taken so far is kept", result.Outcomes[loadgen.Cancelled], result.Requests)
	case after != nil:
		return *after
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

func outputsOf(r *loadgen.Result) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
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

func loadConfig(sc *engine.StepContext, t target.Target) (loadgen.Config, error) {
	cfg := sc.Config
	w := cfg.GetAttr("workload")
	if w.IsNull() || !w.Type().IsObjectType() {
		return loadgen.Config{}, fmt.Errorf("workload must be a workload block reference such as workload.capacity")
	}
	wl := loadgen.Workload{
		Corpus: target.Str(w, "corpus"), CorpusSeed: int64(target.Num(w, "corpus_seed", 0)),
		NominalContext: target.Int(w, "nominal_context", 1024), Prefixes: target.Str(w, "prefixes"),
	}
	if wl.Corpus == "" {
		wl.Corpus = "synthetic-summary"
	}
	if wl.Prefixes == "" {
		wl.Prefixes = "unique"
	}
	if v := target.Int(w, "max_tokens", -1); v >= 0 {
		wl.MaxTokens = &v
	}
	if v := target.Num(w, "temperature", -1); v >= 0 {
		wl.Temperature = &v
	}
	if v := target.Num(w, "top_p", -1); v >= 0 {
		wl.TopP = &v
	}
	if v := target.Int(w, "seed", -1); v >= 0 {
		s := int64(v)
		wl.Seed = &s
	}
	if v := target.Str(w, "reasoning_effort"); v != "" {
		wl.ReasoningEffort = &v
	}
	rep := target.Int(cfg, "repetition", 0)
	model := t.Model
	if model == "" && strings.HasPrefix(t.Image, "sim:") {
		if p, err := sim.LookupProfile(strings.TrimPrefix(t.Image, "sim:")); err == nil {
			model = p.ServedModelName
		}
	}
	lc := loadgen.Config{
		Endpoint: t.Endpoint, Model: model, APIKey: loadgen.Secret(t.APIKey), API: target.Str(w, "api"),
		Concurrency: target.Int(cfg, "concurrency", 1), Requests: target.Int(cfg, "requests", 0),
		Mode: target.Str(cfg, "mode"), Rate: target.Num(cfg, "rate", 0),
		IDPrefix: requestIDPrefix(sc, rep), Workload: wl, Repetition: rep,
	}
	lc.Timeout = (Step{}).DefaultTimeout()
	if d := sc.Instance.Meta.Timeout; d > 0 {
		lc.Timeout = d
	}
	if s := target.Str(cfg, "request_timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			return lc, fmt.Errorf("request_timeout: %v", err)
		}
		lc.RequestTimeout = d
	}
	return lc, lc.Validate()
}

// requestIDPrefix makes IDs <campaign>/<step>/<rep>: the same request of the same
// repetition has the same ID on every run, so server logs line up with records.
func requestIDPrefix(sc *engine.StepContext, rep int) string {
	inst := sc.Instance
	step := inst.Type + "." + inst.Name
	if inst.Cell != "" {
		step += "/" + inst.Cell
	} else if inst.Keyed {
		step += "/" + inst.Key
	}
	return fmt.Sprintf("%s/%s/%d", sc.Campaign, step, rep)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
