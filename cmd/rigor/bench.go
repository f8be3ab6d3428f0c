package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

// Exit codes of `rigor bench`, beside 0, exitError1 (an error: nothing ran, or it
// could not be written) and exitUsage. They do not reuse the campaign codes 3-6,
// which mean campaign states. README "Exit codes of rigor bench" lists them and
// testdata/script/bench*.txtar checks each.
const (
	exitSomeFailed = 7 // some requests failed: every outcome but ok counts
	exitAllFailed  = 8 // every request failed
)

// Dataset names of --dataset-name.
const (
	datasetCorpus   = "corpus"
	datasetPrompts  = "prompts"
	datasetShareGPT = "sharegpt"
	datasetRandom   = "random"
)

var datasetNames = []string{datasetCorpus, datasetPrompts, datasetShareGPT, datasetRandom}

// benchArgs are the flags of `rigor bench`.
type benchArgs struct {
	endpoint, model, api, apiKeyEnv   string
	concurrency, rate                 string // one value, or a comma-separated sweep
	requests, maxTokens, warmup       int
	mode, arrival                     string
	corpus, prefixes, reasoningEffort string
	corpusSeed                        int64
	nominalContext                    int
	dataset, datasetPath              string
	randomIn, randomOut               int
	randomRange                       float64
	temperature, topP                 float64
	seed                              int64
	minTokens                         int
	ignoreEOS, continuousUsage        bool
	assertPrompt, assertCompletion    int
	timeout, requestTimeout, duration time.Duration
	percentiles, goodput              string
	idPrefix, out                     string
	json                              bool
	set                               func(name string) bool
}

func newBenchCmd(g *globals) *cobra.Command {
	var a benchArgs
	cmd := &cobra.Command{
		Use:   "bench --endpoint URL --model M --requests K --max-tokens T --out DIR [--concurrency N[,N...] | --concurrency N --rate R[,R...]]",
		Short: "Benchmark any OpenAI-compatible endpoint, without a campaign",
		Long: `Sends streaming requests through the same client as the block step, at a fixed
concurrency (closed loop) or request rate (open loop), and writes requests.jsonl and
result.json to --out. A comma-separated --concurrency or --rate runs one block per
level (out/c4/, out/r2/, ...) and adds a sweep table and a throughput-latency chart
with its Pareto front (sweep.json, sweep.png, sweep.svg).

The figures (stdout, or result.json with --json) are those vllm bench serve and
AIPerf report, defined in steps/internal/loadgen/metrics.go: request, output and
total token throughput; mean, std, min, max and --percentiles of TTFO, TTFT, TPOT,
ITL and E2E; goodput under --goodput SLOs; the achieved request rate and schedule
lag. Latencies run from each request's scheduled send, so client queueing counts.

Exit status: 0 when every request succeeded, 7 when some failed, 8 when all failed
(the first distinct errors are printed), 130 when interrupted, 1 on an error, 2 on a
bad flag.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.set = cmd.Flags().Changed
			plan, err := a.plan()
			if err != nil {
				return &exitError{code: exitUsage, msg: err.Error()}
			}
			plan.settings = flagSettings(cmd.Flags())
			return runBench(g, plan)
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.endpoint, "endpoint", "", "base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000")
	f.StringVar(&a.model, "model", "", "model name sent in every request")
	f.StringVar(&a.api, "api", steps.LoadAPIChat, "API: chat (/v1/chat/completions) or completions (/v1/completions)")
	f.StringVar(&a.apiKeyEnv, "api-key-env", "", "name of an environment variable holding the API key (sent as a bearer token, never written)")
	f.StringVar(&a.concurrency, "concurrency", "1", "requests in flight (closed loop) or the ceiling (open loop); a comma-separated list sweeps them")
	f.StringVar(&a.rate, "rate", "", "open loop: requests per second (implies --mode open; --concurrency is the ceiling); a comma-separated list sweeps them")
	f.IntVar(&a.requests, "requests", 0, "requests per level, exactly (with --duration: at most)")
	f.IntVar(&a.maxTokens, "max-tokens", 0, "max_tokens of every request (a prompts line's own max_tokens takes precedence; --dataset-name random: --random-output-len instead)")
	f.StringVar(&a.mode, "mode", steps.LoadModeClosed, "closed (fixed concurrency) or open (arrivals at --rate)")
	f.StringVar(&a.arrival, "arrival", "poisson", "open loop: poisson or constant arrivals")
	f.StringVar(&a.dataset, "dataset-name", datasetCorpus, fmt.Sprintf("prompt source, one of %v", datasetNames))
	f.StringVar(&a.datasetPath, "dataset-path", "", `prompts: a JSONL file of {"prompt": ...} or {"messages": [...]} lines; sharegpt: a ShareGPT JSON file`)
	f.IntVar(&a.randomIn, "random-input-len", 0, "random: prompt length in tokens (whitespace words)")
	f.IntVar(&a.randomOut, "random-output-len", 0, "random: max_tokens of each request")
	f.Float64Var(&a.randomRange, "random-range-ratio", 0, "random: draw both lengths uniformly from len x [1-r, 1+r]")
	f.StringVar(&a.corpus, "corpus", "synthetic-summary", fmt.Sprintf("corpus: the generator, one of %v", steps.CorpusKinds()))
	f.Int64Var(&a.corpusSeed, "corpus-seed", 4342, "seed of the prompt content, corpus or random (never sent as an API seed)")
	f.IntVar(&a.nominalContext, "nominal-context", 1024, "corpus: nominal context budget of each prompt, in tokens")
	f.StringVar(&a.prefixes, "prefixes", steps.PrefixesUnique, "corpus: unique (per request) or repeated prefixes")
	f.Float64Var(&a.temperature, "temperature", 0, "sampling temperature (omitted unless set)")
	f.Float64Var(&a.topP, "top-p", 0, "top_p (omitted unless set)")
	f.Int64Var(&a.seed, "seed", 0, "API sampling seed (omitted unless set)")
	f.StringVar(&a.reasoningEffort, "reasoning-effort", "", "reasoning_effort (omitted unless set)")
	f.IntVar(&a.minTokens, "min-tokens", 0, "min_tokens of every request (vLLM, SGLang; omitted unless set): with --max-tokens equal, an exact length")
	f.BoolVar(&a.ignoreEOS, "ignore-eos", false, "send ignore_eos (vLLM, SGLang): generate until max_tokens")
	f.IntVar(&a.assertPrompt, "assert-prompt-tokens", 0, "fail a request (assertion_failed) whose usage.prompt_tokens differs")
	f.IntVar(&a.assertCompletion, "assert-completion-tokens", 0, "fail a request (assertion_failed) whose usage.completion_tokens differs")
	f.BoolVar(&a.continuousUsage, "continuous-usage-stats", false, "ask for usage on every chunk (stream_options.continuous_usage_stats, vLLM and SGLang): exact ITL with multi-token chunks")
	f.IntVar(&a.warmup, "warmup-requests", 0, "requests sent before each level and left out of its figures (warmup.jsonl)")
	f.DurationVar(&a.duration, "duration", 0, "stop sending new requests after this long; those in flight finish (0: send --requests)")
	f.DurationVar(&a.timeout, "timeout", 600*time.Second, "hard bound of each level")
	f.DurationVar(&a.requestTimeout, "request-timeout", 0, "per-request timeout (0: none)")
	f.StringVar(&a.percentiles, "percentiles", "50,90,95,99", "percentiles to report, comma-separated, each in (0, 100]")
	f.StringVar(&a.goodput, "goodput", "", "SLOs of goodput, e.g. ttft:200ms,tpot:50ms (metrics ttft, ttfo, tpot, e2e; a bare number is ms)")
	f.StringVar(&a.idPrefix, "id-prefix", "bench", "request IDs are <id-prefix>/<index>, <id-prefix>/<level>/<index> in a sweep (warm-up: <id-prefix>-warmup/<index>, <id-prefix>/<level>-warmup/<index>)")
	f.StringVar(&a.out, "out", "", "new or empty directory for the results (created)")
	f.BoolVar(&a.json, "json", false, "print result.json (sweep.json for a sweep) to stdout instead of the tables")
	return cmd
}

// benchPlan is a validated bench: the client configuration of every level.
type benchPlan struct {
	levels      []benchLevel
	sweep       string // "", "concurrency" or "rate"
	source      func(cfg steps.LoadConfig) steps.LoadSource
	dataset     string
	warmup      int
	figures     steps.LoadFigureOptions
	out         string
	json        bool
	settings    map[string]string
	requestsCap int
}

// benchLevel is one block of a bench.
type benchLevel struct {
	name string // "c4", "r2.5"; the directory of a sweep level
	cfg  steps.LoadConfig
}

// plan checks every flag, naming the flag in each problem, and builds the levels.
func (a *benchArgs) plan() (*benchPlan, error) {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if u, err := url.Parse(a.endpoint); a.endpoint == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("--endpoint %q: want an http:// or https:// base URL", a.endpoint)
	}
	if a.model == "" {
		bad("--model is required")
	}
	if a.api != steps.LoadAPIChat && a.api != steps.LoadAPICompletions {
		bad("--api %q: want chat or completions", a.api)
	}
	concs, err := parseList(a.concurrency, func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > steps.MaxLoadConcurrency {
			return 0, fmt.Errorf("want 1 to %d", steps.MaxLoadConcurrency)
		}
		return n, nil
	})
	if err != nil {
		bad("--concurrency %q: %v", a.concurrency, err)
	}
	mode := a.mode
	if a.set("rate") && !a.set("mode") {
		mode = steps.LoadModeOpen
	}
	var rates []float64
	switch mode {
	case steps.LoadModeClosed:
		if a.set("rate") {
			bad("--rate applies to --mode open only")
		}
		if a.set("arrival") {
			bad("--arrival applies to --mode open only (a closed loop sends the next request when one ends)")
		}
	case steps.LoadModeOpen:
		rates, err = parseList(a.rate, func(s string) (float64, error) {
			r, err := strconv.ParseFloat(s, 64)
			if err != nil || !(r > 0) || r > 1e6 {
				return 0, fmt.Errorf("want a positive request rate")
			}
			return r, nil
		})
		if err != nil {
			bad("--rate %q: --mode open needs a positive request rate", a.rate)
		}
		if a.arrival != "poisson" && a.arrival != "constant" {
			bad("--arrival %q: want poisson or constant", a.arrival)
		}
		if !a.set("concurrency") {
			bad("--rate needs --concurrency: the most requests in flight at once (one connection each), which caps the rate the client can keep")
		}
		if len(concs) > 1 {
			bad("--concurrency %q: in open loop it is one ceiling; sweep --rate instead", a.concurrency)
		}
	default:
		bad("--mode %q: want closed or open", mode)
	}
	if a.requests < 1 || a.requests > steps.MaxLoadRequests {
		bad("--requests %d: want 1 to %d", a.requests, steps.MaxLoadRequests)
	}
	if !slices.Contains(datasetNames, a.dataset) {
		bad("--dataset-name %q: want one of %v", a.dataset, datasetNames)
	}
	needPath := a.dataset == datasetPrompts || a.dataset == datasetShareGPT
	if needPath != (a.datasetPath != "") {
		if needPath {
			bad("--dataset-name %s needs --dataset-path", a.dataset)
		} else {
			bad("--dataset-path applies to --dataset-name prompts or sharegpt")
		}
	}
	random := a.dataset == datasetRandom
	for _, n := range []string{"random-input-len", "random-output-len", "random-range-ratio"} {
		if a.set(n) && !random {
			bad("--%s applies to --dataset-name random", n)
		}
	}
	if a.set("corpus-seed") && (a.dataset == datasetPrompts || a.dataset == datasetShareGPT) {
		bad("--corpus-seed applies to --dataset-name corpus or random: a %s file's prompts are taken as written", a.dataset)
	}
	for _, n := range []string{"corpus", "nominal-context", "prefixes"} {
		if a.set(n) && a.dataset != datasetCorpus {
			bad("--%s applies to --dataset-name corpus", n)
		}
	}
	switch {
	case random && a.set("max-tokens"):
		bad("--max-tokens does not apply to --dataset-name random: --random-output-len sets max_tokens")
	case !random && a.maxTokens < 1:
		bad("--max-tokens %d: want >= 1", a.maxTokens)
	}
	if a.dataset == datasetCorpus {
		if !slices.Contains(steps.CorpusKinds(), a.corpus) {
			bad("--corpus %q: want one of %v", a.corpus, steps.CorpusKinds())
		}
		if a.prefixes != steps.PrefixesUnique && a.prefixes != steps.PrefixesRepeated {
			bad("--prefixes %q: want unique or repeated", a.prefixes)
		}
		if a.nominalContext < 1 {
			bad("--nominal-context %d: want >= 1", a.nominalContext)
		}
	}
	if a.set("temperature") && (a.temperature < 0 || a.temperature > 2) {
		bad("--temperature %g: want 0..2", a.temperature)
	}
	if a.set("top-p") && (a.topP <= 0 || a.topP > 1) {
		bad("--top-p %g: want > 0 and <= 1", a.topP)
	}
	if a.set("min-tokens") {
		switch {
		case a.minTokens < 0:
			bad("--min-tokens %d: want >= 0", a.minTokens)
		case random && a.randomRange > 0:
			bad("--min-tokens with --random-range-ratio: the output length varies per request; use --ignore-eos for exact lengths")
		case random && a.minTokens > a.randomOut:
			bad("--min-tokens %d: want <= --random-output-len %d", a.minTokens, a.randomOut)
		case !random && a.minTokens > a.maxTokens:
			bad("--min-tokens %d: want <= --max-tokens %d", a.minTokens, a.maxTokens)
		}
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"assert-prompt-tokens", a.assertPrompt}, {"assert-completion-tokens", a.assertCompletion}} {
		if a.set(c.name) && c.v < 1 {
			bad("--%s %d: want >= 1", c.name, c.v)
		}
	}
	if a.warmup < 0 || a.warmup > steps.MaxLoadRequests {
		bad("--warmup-requests %d: want 0 to %d", a.warmup, steps.MaxLoadRequests)
	}
	if a.timeout <= 0 {
		bad("--timeout %s: want > 0", a.timeout)
	}
	if a.requestTimeout < 0 {
		bad("--request-timeout %s: want >= 0", a.requestTimeout)
	}
	if a.duration < 0 || (a.duration > 0 && a.duration >= a.timeout) {
		bad("--duration %s: want > 0 and shorter than --timeout %s, which must leave the last requests time to finish", a.duration, a.timeout)
	}
	ps, err := parseList(a.percentiles, func(s string) (float64, error) {
		p, err := strconv.ParseFloat(s, 64)
		if err != nil || !(p > 0 && p <= 100) {
			return 0, fmt.Errorf("each in (0, 100]")
		}
		return p, nil
	})
	if err != nil {
		bad("--percentiles %q: want numbers %v", a.percentiles, err)
	}
	slos, err := parseGoodput(a.goodput)
	if err != nil {
		bad("--goodput %q: %v", a.goodput, err)
	}
	if a.out == "" {
		bad("--out is required: the directory for requests.jsonl and result.json")
	} else if why := outHolds(a.out); why != "" {
		bad("--out %s %s", a.out, why)
	}
	if a.idPrefix == "" {
		bad("--id-prefix must not be empty")
	}
	var key string
	if a.apiKeyEnv != "" {
		key = os.Getenv(a.apiKeyEnv)
		if key == "" {
			bad("--api-key-env %s: the variable is empty or unset", a.apiKeyEnv)
		}
	}
	if len(errs) > 0 {
		return nil, errors.New(strings.Join(errs, "; "))
	}

	p := &benchPlan{dataset: a.dataset, warmup: a.warmup, out: a.out, json: a.json, requestsCap: a.requests,
		figures: steps.LoadFigureOptions{Percentiles: ps, SLOs: slos}}
	src, err := a.source()
	if err != nil {
		return nil, err
	}
	p.source = src
	// A prompts line's own max_tokens takes precedence over --max-tokens, so
	// --min-tokens must fit under it too, or every such request is a 400.
	if a.dataset == datasetPrompts && a.set("min-tokens") {
		ds := src(steps.LoadConfig{})
		for i := range ds.Distinct() {
			if in, err := ds.Input(i); err == nil && in.MaxTokens != nil && *in.MaxTokens < a.minTokens {
				return nil, fmt.Errorf("--min-tokens %d: want <= the max_tokens %d that prompt %d of %s sets for itself", a.minTokens, *in.MaxTokens, i+1, a.datasetPath)
			}
		}
	}
	w := steps.LoadWorkload{Corpus: a.corpus, CorpusSeed: a.corpusSeed, NominalContext: a.nominalContext, Prefixes: a.prefixes,
		IgnoreEOS: a.ignoreEOS, ContinuousUsage: a.continuousUsage}
	if !random {
		maxTokens := a.maxTokens
		w.MaxTokens = &maxTokens
	}
	opt := func(name string, v *int) *int {
		if !a.set(name) {
			return nil
		}
		c := *v
		return &c
	}
	w.MinTokens, w.AssertPromptTokens, w.AssertCompletionTokens = opt("min-tokens", &a.minTokens), opt("assert-prompt-tokens", &a.assertPrompt), opt("assert-completion-tokens", &a.assertCompletion)
	if a.set("temperature") {
		w.Temperature = &a.temperature
	}
	if a.set("top-p") {
		w.TopP = &a.topP
	}
	if a.set("seed") {
		w.Seed = &a.seed
	}
	if a.reasoningEffort != "" {
		w.ReasoningEffort = &a.reasoningEffort
	}
	base := steps.LoadConfig{
		Endpoint: a.endpoint, Model: a.model, APIKey: steps.LoadSecret(key), API: a.api, Mode: mode, IDPrefix: a.idPrefix,
		Requests: a.requests, Timeout: a.timeout, RequestTimeout: a.requestTimeout, Duration: a.duration, Workload: w, RecordChunks: true,
	}
	if mode == steps.LoadModeOpen {
		base.Arrival = a.arrival
	}
	switch {
	case len(concs) > 1:
		p.sweep = "concurrency"
	case len(rates) > 1:
		p.sweep = "rate"
	}
	if mode == steps.LoadModeOpen {
		for _, r := range rates {
			cfg := base
			cfg.Concurrency, cfg.Rate = concs[0], r
			p.levels = append(p.levels, benchLevel{name: "r" + strconv.FormatFloat(r, 'g', -1, 64), cfg: cfg})
		}
	} else {
		for _, c := range concs {
			cfg := base
			cfg.Concurrency = c
			p.levels = append(p.levels, benchLevel{name: "c" + strconv.Itoa(c), cfg: cfg})
		}
	}
	// The levels of a sweep send distinct request IDs: <id-prefix>/<level>/<index>.
	if p.sweep != "" {
		for i := range p.levels {
			p.levels[i].cfg.IDPrefix += "/" + p.levels[i].name
		}
	}
	for _, l := range p.levels {
		cfg := l.cfg
		cfg.Source = p.source(cfg)
		if err := cfg.Validate(); err != nil { // anything the flags above did not catch
			return nil, err
		}
	}
	return p, nil
}

// source builds the prompt source of the dataset flags; for the corpus it depends on
// the level (a corpus is per concurrency cell).
func (a *benchArgs) source() (func(steps.LoadConfig) steps.LoadSource, error) {
	var src steps.LoadSource
	var err error
	switch a.dataset {
	case datasetCorpus:
		return func(cfg steps.LoadConfig) steps.LoadSource { return steps.LoadCorpusSource{ID: cfg.CorpusID()} }, nil
	case datasetPrompts:
		src, err = steps.PromptsDataset(a.datasetPath)
	case datasetShareGPT:
		src, err = steps.ShareGPTDataset(a.datasetPath)
	case datasetRandom:
		src, err = steps.RandomDataset(steps.RandomDatasetSettings{InputLen: a.randomIn, OutputLen: a.randomOut, RangeRatio: a.randomRange, Seed: a.corpusSeed})
	}
	if err != nil {
		return nil, flagNamed(err)
	}
	return func(steps.LoadConfig) steps.LoadSource { return src }, nil
}

// flagNamed points a dataset error at the flags that set it.
func flagNamed(err error) error {
	msg := err.Error()
	for _, r := range []struct{ old, new string }{
		{"random input length", "--random-input-len"}, {"random output length", "--random-output-len"}, {"random range ratio", "--random-range-ratio"},
	} {
		msg = strings.Replace(msg, r.old, r.new, 1)
	}
	return errors.New(msg)
}

// parseList parses a comma-separated list of at least one value.
func parseList[T any](s string, parse func(string) (T, error)) ([]T, error) {
	var out []T
	for _, part := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parseGoodput parses --goodput: comma-separated metric:bound pairs, the bound a Go
// duration ("200ms", "0.2s") or a bare number of milliseconds, as vllm bench serve
// takes it. Metrics are the keys of loadgen.SLOMetrics; "e2el" (vLLM's name) is e2e.
func parseGoodput(s string) ([]steps.LoadSLO, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var names []string
	for n := range steps.LoadSLOMetrics {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []steps.LoadSLO
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return nil, fmt.Errorf("%q: want metric:bound, e.g. ttft:200ms", part)
		}
		if k == "e2el" {
			k = "e2e"
		}
		if _, known := steps.LoadSLOMetrics[k]; !known {
			return nil, fmt.Errorf("unknown metric %q: want one of %s", k, strings.Join(names, ", "))
		}
		if seen[k] {
			return nil, fmt.Errorf("%s given twice", k)
		}
		seen[k] = true
		ms, err := strconv.ParseFloat(v, 64)
		if err != nil {
			d, derr := time.ParseDuration(v)
			if derr != nil {
				return nil, fmt.Errorf("%s bound %q: want a duration such as 200ms or a number of milliseconds", k, v)
			}
			ms = float64(d) / 1e6
		}
		if !(ms > 0) {
			return nil, fmt.Errorf("%s bound %q: want > 0", k, v)
		}
		out = append(out, steps.LoadSLO{Metric: k, MaxMS: ms})
	}
	return out, nil
}

// flagSettings is every flag's effective value, for result.json: the settings a
// reader needs to rerun the bench, defaults included.
func flagSettings(fs *pflag.FlagSet) map[string]string {
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		out[f.Name] = f.Value.String()
	})
	return out
}

// benchResult is result.json of one level: the block figures of the block step
// (loadgen.Result, unchanged) and what a bench adds under "bench".
type benchResult struct {
	*steps.LoadResult
	Bench benchInfo `json:"bench"`
}

// benchInfo makes a bench result self-describing.
type benchInfo struct {
	Rigor       string             `json:"rigor"` // buildVersion: version and commit
	StartedAt   time.Time          `json:"started_at"`
	Endpoint    string             `json:"endpoint"`
	Model       string             `json:"model"`
	Level       benchLevelInfo     `json:"level"`
	Settings    map[string]string  `json:"settings"` // every flag, defaults included
	Workload    benchWorkload      `json:"workload"`
	Machine     machine            `json:"machine"`
	Calibration *benchCalibration  `json:"calibration"` // null: see calibration_note
	CalibNote   string             `json:"calibration_note,omitempty"`
	Warmup      *benchWarmup       `json:"warmup"` // null without --warmup-requests
	Figures     steps.LoadFigures  `json:"figures"`
	Errors      []steps.LoadErrors `json:"errors"`  // distinct failures, most frequent first
	Stopped     string             `json:"stopped"` // completed, duration, hard_bound, interrupted
}

type benchLevelInfo struct {
	Name        string   `json:"name"`
	Mode        string   `json:"mode"`
	Concurrency int      `json:"concurrency"`
	Rate        *float64 `json:"rate"`
	Arrival     string   `json:"arrival,omitempty"`
}

type benchWorkload struct {
	Source steps.LoadSourceInfo `json:"source"`
	// SHA256 is loadgen.Digest of the inputs the level sent (the corpus digest for
	// the corpus), so two results with the same digest sent the same prompts.
	SHA256   string `json:"sha256"`
	Requests int    `json:"requests"`
}

type benchWarmup struct {
	Requests int                       `json:"requests"`
	Outcomes map[steps.LoadOutcome]int `json:"outcomes"`
	WallS    float64                   `json:"wall_s"`
	File     string                    `json:"file"`
	Offset   int                       `json:"input_offset"` // warm-up request i sent input offset+i
}

// levelRun is the outcome of one level.
type levelRun struct {
	level  benchLevel
	dir    string
	result *benchResult
}

// runBench runs every level of p, prints the figures, and returns the exit status.
func runBench(g *globals, p *benchPlan) error {
	ctx, stop := watchInterrupts(g, benchInterrupts)
	defer stop()
	if err := os.MkdirAll(p.out, 0o755); err != nil {
		return &exitError{code: exitError1, msg: fmt.Sprintf("--out %s: %v", p.out, err)}
	}
	calib, note := recentCalibration(time.Now())
	mach := thisMachine()
	var runs []levelRun
	for i, l := range p.levels {
		dir := p.out
		if p.sweep != "" {
			dir = filepath.Join(p.out, l.name)
		}
		r, err := runLevel(ctx, g, p, l, dir)
		if r != nil {
			r.Bench.Calibration, r.Bench.CalibNote, r.Bench.Machine = calib, note, mach
			if werr := writeJSONFile(filepath.Join(dir, "result.json"), r); werr != nil {
				return &exitError{code: exitError1, msg: werr.Error()}
			}
			runs = append(runs, levelRun{level: l, dir: dir, result: r})
			if p.sweep == "" {
				if err := benchView(p.json).level(g.stdout, r, dir); err != nil {
					return err
				}
			}
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			if i < len(p.levels)-1 {
				g.log.Warn().Msgf("interrupted: %d of %d levels ran", i+1, len(p.levels))
			}
			break
		}
	}
	if p.sweep != "" {
		sw, err := writeSweep(p, runs)
		if err != nil {
			return &exitError{code: exitError1, msg: err.Error()}
		}
		if err := benchView(p.json).sweep(g.stdout, sw); err != nil {
			return err
		}
	}
	return benchExit(runs, ctx.Err() != nil)
}

// runLevel runs one level's warm-up and block, writing its requests under dir. It
// returns the result whenever the block ran, with an error only when it could not
// run or its evidence could not be written.
func runLevel(ctx context.Context, g *globals, p *benchPlan, l benchLevel, dir string) (*benchResult, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &exitError{code: exitError1, msg: fmt.Sprintf("--out %s: %v", dir, err)}
	}
	cfg := l.cfg
	src := p.source(cfg)
	cfg.Source = src
	view := newProgressView(g)
	addr := "bench"
	if p.sweep != "" {
		addr = "bench " + l.name
	}
	var warm *benchWarmup
	if p.warmup > 0 {
		// Warm-up requests send inputs past the measured ones (while the source has
		// them), in a closed loop at the level's concurrency, and go to their own
		// file: they never enter the figures.
		wc := cfg
		wc.Mode, wc.Rate, wc.Arrival, wc.Duration = steps.LoadModeClosed, 0, "", 0
		wc.Requests, wc.IDPrefix = p.warmup, cfg.IDPrefix+"-warmup"
		wc.Source = steps.LoadOffset{Src: src, N: cfg.Requests}
		lg := view.logger()
		lg.Info().Str("block", l.name).Int("requests", p.warmup).Msg("warm-up")
		res, _, err := runBlock(ctx, view, addr+" warm-up", wc, filepath.Join(dir, "warmup.jsonl"))
		if res == nil {
			return nil, err
		}
		warm = &benchWarmup{Requests: res.Requests, Outcomes: res.Outcomes, WallS: res.WallS, File: "warmup.jsonl", Offset: cfg.Requests}
		if ctx.Err() != nil {
			return nil, &exitError{code: exitInterrupted, msg: "interrupted during the warm-up; nothing was measured"}
		}
	}
	started := time.Now().UTC()
	lg := view.logger()
	lg.Info().Str("endpoint", cfg.Endpoint).Str("model", cfg.Model).Str("block", l.name).Int("requests", cfg.Requests).Msg("bench start")
	res, records, err := runBlock(ctx, view, addr, cfg, filepath.Join(dir, "requests.jsonl"))
	if res == nil {
		return nil, err
	}
	digest, derr := steps.LoadDigest(src, max(res.Requests, 1))
	if derr != nil {
		return nil, &exitError{code: exitError1, msg: derr.Error()}
	}
	info := benchInfo{
		Rigor: buildVersion(), StartedAt: started, Endpoint: cfg.Endpoint, Model: cfg.Model, Settings: p.settings,
		Level:    benchLevelInfo{Name: l.name, Mode: cfg.Mode, Concurrency: cfg.Concurrency, Arrival: cfg.Arrival},
		Workload: benchWorkload{Source: src.Describe(), SHA256: digest, Requests: res.Requests},
		Warmup:   warm, Figures: steps.ComputeLoadFigures(records, p.figures), Errors: steps.LoadErrorGroups(records),
		Stopped: "completed",
	}
	if info.Errors == nil {
		info.Errors = []steps.LoadErrors{}
	}
	if cfg.Mode == steps.LoadModeOpen {
		r := cfg.Rate
		info.Level.Rate = &r
	}
	switch {
	case ctx.Err() != nil:
		info.Stopped = "interrupted"
	case res.Incomplete:
		info.Stopped = "hard_bound"
	case cfg.Duration > 0 && res.Requests < cfg.Requests:
		info.Stopped = "duration"
	}
	return &benchResult{LoadResult: res, Bench: info}, err
}

// runBlock runs one block through the block step's client, writing its records to
// path, and returns the result and the records whenever the block ran. A failure to
// write the records is an error; the block's own bound or cancellation is not (the
// result says so).
func runBlock(ctx context.Context, view progressView, addr string, cfg steps.LoadConfig, path string) (*steps.LoadResult, []steps.LoadRecord, error) {
	out, err := os.Create(path)
	if err != nil {
		return nil, nil, &exitError{code: exitError1, msg: err.Error()}
	}
	defer out.Close()
	var records []steps.LoadRecord
	tally := steps.NewLoadTally(cfg.Requests)
	cfg.OnRecord = func(r steps.LoadRecord) {
		records = append(records, r) // calls never overlap (loadgen.Config.OnRecord)
		if tally.Add(r) {
			view.update(addr, engine.Progress{Done: tally.Done, Failed: tally.Failed, Total: tally.Total, Rate: tally.Rate()}, engine.OutageView{})
		}
	}
	res, runErr := steps.RunLoad(ctx, cfg, out)
	view.finish(addr, runErr == nil)
	if res == nil {
		if errors.Is(runErr, steps.ErrLoadWarmup) {
			return nil, nil, &exitError{code: exitError1, msg: fmt.Sprintf("cannot reach --endpoint %s: %v", cfg.Endpoint, runErr)}
		}
		if ctx.Err() != nil {
			return nil, nil, &exitError{code: exitInterrupted, msg: "interrupted before the first request"}
		}
		return nil, nil, &exitError{code: exitError1, msg: runErr.Error()}
	}
	if errors.Is(runErr, steps.ErrLoadWrite) {
		return res, records, &exitError{code: exitError1, msg: runErr.Error()}
	}
	if err := out.Sync(); err != nil {
		return res, records, &exitError{code: exitError1, msg: err.Error()}
	}
	// Records come in finishing order; the figures do not depend on it, but
	// requests.jsonl readers and ErrorGroups' "first request" read best by index.
	sort.Slice(records, func(i, j int) bool { return records[i].Index < records[j].Index })
	return res, records, nil
}

// benchExit is the exit status of a finished bench: 130 when interrupted, 8 when no
// request succeeded, 7 when some failed, else 0; the message names the failures and
// the first distinct errors.
func benchExit(runs []levelRun, interrupted bool) error {
	attempted, failed := 0, 0
	var groups []steps.LoadErrors
	idx := map[[2]string]int{}
	for _, r := range runs {
		f := r.result.Bench.Figures
		attempted += f.Attempted
		failed += f.Failed
		for _, e := range r.result.Bench.Errors {
			k := [2]string{string(e.Outcome), e.Message}
			if i, ok := idx[k]; ok {
				groups[i].Count += e.Count
				continue
			}
			idx[k] = len(groups)
			groups = append(groups, e)
		}
	}
	if interrupted {
		return &exitError{code: exitInterrupted, msg: fmt.Sprintf("interrupted: %d of %d requests taken failed or were cancelled; every record taken is written", failed, attempted)}
	}
	if failed == 0 {
		return nil
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Count > groups[j].Count })
	code, what := exitSomeFailed, fmt.Sprintf("%d of %d requests failed", failed, attempted)
	if failed == attempted {
		code, what = exitAllFailed, fmt.Sprintf("all %d requests failed", attempted)
	}
	if len(runs) > 1 {
		what += fmt.Sprintf(" across %d levels", len(runs))
	}
	var b strings.Builder
	b.WriteString(what + "; first distinct errors:")
	for i, e := range groups {
		if i == maxErrorsShown {
			fmt.Fprintf(&b, "\n  ... and %d more (result.json \"errors\")", len(groups)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s x%d: %s", e.Outcome, e.Count, e.Message)
	}
	return &exitError{code: code, msg: b.String()}
}

// maxErrorsShown bounds the distinct errors printed; result.json keeps them all.
const maxErrorsShown = 5

func writeJSONFile(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// outHolds says why dir cannot take a run's results: it holds files already, which
// a run would overwrite ("" otherwise; a path that is no directory fails when the
// run creates it). A run writes only into a new or empty directory, so an earlier
// run is never lost.
func outHolds(dir string) string {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return fmt.Sprintf("already holds %s: a run writes into a new or empty directory, so an earlier run's results are never overwritten", entries[0].Name())
	}
	return ""
}
