package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newBenchCmd) }

// benchArgs are the flags of `rigor bench`.
type benchArgs struct {
	endpoint, model, api, apiKeyEnv   string
	concurrency, requests, maxTokens  int
	mode, arrival                     string
	rate                              float64
	corpus, prefixes, reasoningEffort string
	corpusSeed                        int64
	nominalContext                    int
	temperature, topP                 float64
	seed                              int64
	timeout, requestTimeout           time.Duration
	idPrefix, out                     string
	json                              bool
	set                               func(name string) bool
}

func newBenchCmd(g *globals) *cobra.Command {
	var a benchArgs
	cmd := &cobra.Command{
		Use:   "bench --endpoint URL --model M --concurrency N --requests K --max-tokens T --out DIR",
		Short: "One block against any OpenAI-compatible endpoint, without a campaign",
		Long: `Sends one block of streaming requests through the same client as the block step
and writes requests.jsonl and result.json to --out. The block figures go to stdout as
a table (or JSON with --json); progress and logs go to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a.set = cmd.Flags().Changed
			cfg, err := a.config()
			if err != nil {
				return &exitError{code: 2, msg: err.Error()}
			}
			res, err := runBench(cmd.Context(), g, cfg, a.out)
			if res != nil {
				if verr := benchView(a.json).render(g.stdout, cfg, res, a.out); verr != nil {
					return verr
				}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&a.endpoint, "endpoint", "", "base URL of the OpenAI-compatible server, e.g. http://127.0.0.1:8000")
	f.StringVar(&a.model, "model", "", "model name sent in every request")
	f.StringVar(&a.api, "api", steps.LoadAPIChat, "API: chat (/v1/chat/completions) or completions (/v1/completions)")
	f.StringVar(&a.apiKeyEnv, "api-key-env", "", "name of an environment variable holding the API key (sent as a bearer token, never written)")
	f.IntVar(&a.concurrency, "concurrency", 1, "requests in flight (closed loop) or the ceiling (open loop)")
	f.IntVar(&a.requests, "requests", 0, "requests in the block, exactly")
	f.IntVar(&a.maxTokens, "max-tokens", 0, "max_tokens of every request")
	f.StringVar(&a.mode, "mode", steps.LoadModeClosed, "closed (fixed concurrency) or open (arrivals at --rate)")
	f.Float64Var(&a.rate, "rate", 0, "open loop: requests per second")
	f.StringVar(&a.arrival, "arrival", "poisson", "open loop: poisson or constant arrivals")
	f.StringVar(&a.corpus, "corpus", "synthetic-summary", fmt.Sprintf("prompt corpus, one of %v", steps.CorpusKinds()))
	f.Int64Var(&a.corpusSeed, "corpus-seed", 4342, "seed of the prompt content (never sent as an API seed)")
	f.IntVar(&a.nominalContext, "nominal-context", 1024, "nominal context budget of each prompt, in tokens")
	f.StringVar(&a.prefixes, "prefixes", steps.PrefixesUnique, "unique (per request) or repeated prefixes")
	f.Float64Var(&a.temperature, "temperature", 0, "sampling temperature (omitted unless set)")
	f.Float64Var(&a.topP, "top-p", 0, "top_p (omitted unless set)")
	f.Int64Var(&a.seed, "seed", 0, "API sampling seed (omitted unless set)")
	f.StringVar(&a.reasoningEffort, "reasoning-effort", "", "reasoning_effort (omitted unless set)")
	f.DurationVar(&a.timeout, "timeout", 600*time.Second, "hard bound of the block")
	f.DurationVar(&a.requestTimeout, "request-timeout", 0, "per-request timeout (0: none)")
	f.StringVar(&a.idPrefix, "id-prefix", "bench", "request IDs are <id-prefix>/<index>")
	f.StringVar(&a.out, "out", "", "directory for requests.jsonl and result.json (created)")
	f.BoolVar(&a.json, "json", false, "print result.json to stdout instead of the table")
	return cmd
}

// config checks every flag, naming the flag in each problem, and builds the client
// configuration.
func (a *benchArgs) config() (steps.LoadConfig, error) {
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
	if a.concurrency < 1 {
		bad("--concurrency %d: want >= 1", a.concurrency)
	}
	if a.requests < 1 {
		bad("--requests %d: want >= 1", a.requests)
	}
	if a.maxTokens < 1 {
		bad("--max-tokens %d: want >= 1", a.maxTokens)
	}
	switch a.mode {
	case steps.LoadModeClosed:
		if a.set("rate") {
			bad("--rate applies to --mode open only")
		}
	case steps.LoadModeOpen:
		if !(a.rate > 0) {
			bad("--rate %g: --mode open needs a positive request rate", a.rate)
		}
		if a.arrival != "poisson" && a.arrival != "constant" {
			bad("--arrival %q: want poisson or constant", a.arrival)
		}
	default:
		bad("--mode %q: want closed or open", a.mode)
	}
	if !slices.Contains(steps.CorpusKinds(), a.corpus) {
		bad("--corpus %q: want one of %v", a.corpus, steps.CorpusKinds())
	}
	if a.prefixes != steps.PrefixesUnique && a.prefixes != steps.PrefixesRepeated {
		bad("--prefixes %q: want unique or repeated", a.prefixes)
	}
	if a.nominalContext < 1 {
		bad("--nominal-context %d: want >= 1", a.nominalContext)
	}
	if a.set("temperature") && (a.temperature < 0 || a.temperature > 2) {
		bad("--temperature %g: want 0..2", a.temperature)
	}
	if a.set("top-p") && (a.topP <= 0 || a.topP > 1) {
		bad("--top-p %g: want > 0 and <= 1", a.topP)
	}
	if a.timeout <= 0 {
		bad("--timeout %s: want > 0", a.timeout)
	}
	if a.requestTimeout < 0 {
		bad("--request-timeout %s: want >= 0", a.requestTimeout)
	}
	if a.out == "" {
		bad("--out is required: the directory for requests.jsonl and result.json")
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
		return steps.LoadConfig{}, errors.New(strings.Join(errs, "; "))
	}
	maxTokens := a.maxTokens
	w := steps.LoadWorkload{Corpus: a.corpus, CorpusSeed: a.corpusSeed, NominalContext: a.nominalContext, Prefixes: a.prefixes, MaxTokens: &maxTokens}
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
	cfg := steps.LoadConfig{
		Endpoint: a.endpoint, Model: a.model, APIKey: steps.LoadSecret(key), API: a.api,
		Concurrency: a.concurrency, Requests: a.requests, Mode: a.mode, IDPrefix: a.idPrefix,
		Timeout: a.timeout, RequestTimeout: a.requestTimeout, Workload: w,
	}
	if a.mode == steps.LoadModeOpen {
		cfg.Rate, cfg.Arrival = a.rate, a.arrival
	}
	if err := cfg.Validate(); err != nil { // anything the flags above did not catch
		return cfg, err
	}
	return cfg, nil
}

// runBench runs the block, writing requests.jsonl and result.json under dir. It
// returns the result whenever the block ran, with the block's error if any.
func runBench(ctx context.Context, g *globals, cfg steps.LoadConfig, dir string) (*steps.LoadResult, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	ictx, stop := interruptContext(g)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	context.AfterFunc(ictx, cancel)

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, &exitError{code: 1, msg: fmt.Sprintf("--out %s: %v", dir, err)}
	}
	out, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		return nil, &exitError{code: 1, msg: err.Error()}
	}
	defer out.Close()
	view := newProgressView(g)
	const addr = "bench"
	tally := steps.NewLoadTally(cfg.Requests)
	cfg.OnRecord = func(r steps.LoadRecord) {
		if tally.Add(r) {
			view.update(addr, engine.Progress{Done: tally.Done, Failed: tally.Failed, Total: tally.Total, Rate: tally.Rate()}, engine.OutageView{})
		}
	}
	lg := view.logger()
	lg.Info().Str("endpoint", cfg.Endpoint).Str("model", cfg.Model).Int("concurrency", cfg.Concurrency).
		Int("requests", cfg.Requests).Msg("bench start")
	res, runErr := steps.RunLoad(ctx, cfg, out)
	view.finish(addr, runErr == nil)
	if res == nil {
		if errors.Is(runErr, steps.ErrLoadWarmup) {
			return nil, &exitError{code: 1, msg: fmt.Sprintf("cannot reach --endpoint %s: %v", cfg.Endpoint, runErr)}
		}
		return nil, &exitError{code: 1, msg: runErr.Error()}
	}
	if err := out.Sync(); err != nil {
		return res, &exitError{code: 1, msg: err.Error()}
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "result.json"), append(b, '\n'), 0o644); err != nil {
		return res, &exitError{code: 1, msg: err.Error()}
	}
	if runErr != nil {
		return res, &exitError{code: 1, msg: runErr.Error()}
	}
	return res, nil
}

// benchRenderer prints a finished block to stdout.
type benchRenderer interface {
	render(w io.Writer, cfg steps.LoadConfig, res *steps.LoadResult, dir string) error
}

func benchView(asJSON bool) benchRenderer {
	if asJSON {
		return benchJSON{}
	}
	return benchTable{}
}

type benchJSON struct{}

func (benchJSON) render(w io.Writer, _ steps.LoadConfig, res *steps.LoadResult, _ string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

type benchTable struct{}

func (benchTable) render(w io.Writer, cfg steps.LoadConfig, res *steps.LoadResult, dir string) error {
	loop := fmt.Sprintf("closed loop, concurrency %d", cfg.Concurrency)
	if cfg.Mode == steps.LoadModeOpen {
		loop = fmt.Sprintf("open loop, %g req/s (%s), ceiling %d", cfg.Rate, cfg.Arrival, cfg.Concurrency)
	}
	fmt.Fprintf(w, "%s  model %s  %s  %d requests\n\n", cfg.Endpoint, cfg.Model, loop, res.Requests)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "successes (ok)\tn\tp50\tp95\tp99\t")
	s := res.Successes
	rows := []struct {
		name string
		d    steps.LoadDist
	}{
		{"TTFO (ms)", s.TTFOMS}, {"visible TTFT (ms)", s.TTFTMS}, {"TPOT (ms)", s.TPOTMS}, {"E2E (ms)", s.E2EMS},
		{"decode tok/s", s.DecodeTokS}, {"effective prefill tok/s", s.EffectivePrefillTokS},
	}
	descriptive := false
	for _, r := range rows {
		mark := ""
		if r.d.Descriptive && r.d.Samples > 0 {
			mark, descriptive = "*", true
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s%s\t\n", r.name, r.d.Samples, num(r.d.P50), num(r.d.P95), num(r.d.P99), mark)
	}
	if f := res.Failures; f.Requests > 0 {
		fmt.Fprintf(tw, "failures: E2E (ms)\t%d\t%s\t%s\t%s\t\n", f.E2EMS.Samples, num(f.E2EMS.P50), num(f.E2EMS.P95), num(f.E2EMS.P99))
	}
	tw.Flush()
	if descriptive {
		fmt.Fprintf(w, "* p99 of fewer than %d samples: descriptive only\n", steps.DescriptiveBelow)
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "outcome\tcount\t")
	for _, o := range steps.LoadOutcomes() {
		fmt.Fprintf(tw, "%s\t%d\t\n", o, res.Outcomes[o])
	}
	tw.Flush()
	fmt.Fprintf(w, "\nvisible successes / attempted: %d/%d (%.1f%%)\n", res.VisibleSuccesses, res.Requests, 100*res.VisibleSuccessRate)
	fmt.Fprintf(w, "aggregate output: %.1f tok/s over %.3f s\n", res.AggregateOutputTokS, res.WallS)
	if res.Incomplete {
		fmt.Fprintln(w, "INCOMPLETE: the block hit its hard bound; every record taken is kept")
	}
	fmt.Fprintf(w, "evidence: %s, %s\n", filepath.Join(dir, "requests.jsonl"), filepath.Join(dir, "result.json"))
	return nil
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	v := *p
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
