package loadgen

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// startSim serves the simulator on loopback for one test.
func startSim(t *testing.T, cfg sim.Config) string {
	t.Helper()
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 0.002
	}
	cfg.ModelName = "test-model" // testConfig's
	rn, err := sim.Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	return rn.URL()
}

// runRecords runs a block and reads back its requests.jsonl.
func runRecords(t *testing.T, cfg Config) (*Result, []Record) {
	t.Helper()
	var out bytes.Buffer
	res, err := Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	return res, recs
}

// simPromptTokens is what the simulator reports as prompt_tokens for corpus prompt i
// of cfg: the prompt's tokens plus the chat template's markers.
func simPromptTokens(t *testing.T, cfg Config, i int) int {
	t.Helper()
	p, err := cfg.CorpusID().Prompt(i)
	if err != nil {
		t.Fatal(err)
	}
	return p.Tokens + sim.TemplateTokensPerMessage*len(p.Messages) + sim.TemplateTokensGenerationPrompt
}

// TestFixedOutputFixture is seed 000's fixed-output fixture on the simulator: with
// min_tokens = max_tokens = 1024 and ignore_eos, every request completes with exactly
// 1024 tokens, and the assertions on prompt and completion tokens hold. An assertion
// the server contradicts makes every request assertion_failed, kept in the
// denominator and out of the successes, whichever count (prompt or completion) it
// names.
func TestFixedOutputFixture(t *testing.T) {
	url := startSim(t, sim.Config{})
	base := testConfig(url)
	base.Concurrency, base.Requests = 4, 8
	n := 1024
	base.Workload.MaxTokens, base.Workload.MinTokens, base.Workload.IgnoreEOS = &n, &n, true
	prompt := simPromptTokens(t, base, 0)
	for i := 1; i < base.Requests; i++ {
		if simPromptTokens(t, base, i) != prompt {
			t.Fatal("corpus prompts differ in length; the assertion needs one count")
		}
	}

	t.Run("assertions hold", func(t *testing.T) {
		cfg := base
		cfg.Workload.AssertPromptTokens, cfg.Workload.AssertCompletionTokens = &prompt, &n
		res, recs := runRecords(t, cfg)
		for _, r := range recs {
			if r.Outcome != OK || r.Usage.CompletionTokens != 1024 || r.Usage.PromptTokens != prompt || *r.FinishReason != "length" {
				t.Errorf("%s: %s %q, usage %+v", r.ID, r.Outcome, r.Error, r.Usage)
			}
		}
		if res.Outcomes[OK] != 8 || res.Successes.CompletionTokens.Samples != 8 || *res.Successes.CompletionTokens.P99 != 1024 {
			t.Errorf("outcomes %v completion tokens %+v", res.Outcomes, res.Successes.CompletionTokens)
		}
	})
	t.Run("a contradicted assertion is classified and kept", func(t *testing.T) {
		cfg := base
		wrong := prompt + 1
		cfg.Workload.AssertPromptTokens, cfg.Workload.AssertCompletionTokens = &wrong, &n
		res, recs := runRecords(t, cfg)
		if res.Requests != 8 || res.Outcomes[AssertionFailed] != 8 || res.VisibleSuccesses != 0 || res.Failures.Requests != 8 {
			t.Errorf("requests %d outcomes %v visible %d failures %d", res.Requests, res.Outcomes, res.VisibleSuccesses, res.Failures.Requests)
		}
		want := "usage.prompt_tokens " + strconv.Itoa(prompt) + ", asserted " + strconv.Itoa(wrong)
		if len(recs) != 8 || recs[0].Error != want {
			t.Errorf("%d records; first error %q, want %q", len(recs), recs[0].Error, want)
		}
	})
	t.Run("a contradicted completion assertion is classified and kept", func(t *testing.T) {
		cfg := base
		wrong := n - 1
		cfg.Workload.AssertPromptTokens, cfg.Workload.AssertCompletionTokens = &prompt, &wrong
		res, recs := runRecords(t, cfg)
		if res.Requests != 8 || res.Outcomes[AssertionFailed] != 8 || res.VisibleSuccesses != 0 || res.Failures.Requests != 8 {
			t.Errorf("requests %d outcomes %v visible %d failures %d", res.Requests, res.Outcomes, res.VisibleSuccesses, res.Failures.Requests)
		}
		// The prompt assertion holds, so the error names only the completion count.
		want := "usage.completion_tokens 1024, asserted " + strconv.Itoa(wrong)
		if len(recs) != 8 {
			t.Fatalf("%d records, want 8", len(recs))
		}
		for _, r := range recs {
			if r.Outcome != AssertionFailed || r.Error != want || r.Usage.CompletionTokens != n {
				t.Errorf("%s: %s %q, usage %+v; want assertion_failed %q", r.ID, r.Outcome, r.Error, r.Usage, want)
			}
		}
	})
}

// TestITLWithMultiTokenChunks: the simulator sends three tokens per chunk. With
// per-chunk usage every ok request's ITL is resolved into one sample per token after
// the first chunk, and the samples of a request sum to its generation time; without
// it, those requests are unresolved rather than read as one token per chunk.
func TestITLWithMultiTokenChunks(t *testing.T) {
	url := startSim(t, sim.Config{TokensPerChunk: 3})
	cfg := testConfig(url)
	cfg.Concurrency, cfg.Requests, cfg.RecordChunks = 2, 6, true
	mt := 40
	cfg.Workload.MaxTokens, cfg.Workload.IgnoreEOS = &mt, true

	cfg.Workload.ContinuousUsage = true
	_, recs := runRecords(t, cfg)
	fig := ComputeFigures(recs, FigureOptions{})
	if fig.ITLRequests != 6 || fig.ITLUnresolved != 0 {
		t.Fatalf("itl resolved %d unresolved %d, want 6/0", fig.ITLRequests, fig.ITLUnresolved)
	}
	samples := 0
	for _, r := range recs {
		k := r.TokenChunkTokens
		if len(k) != len(r.TokenChunkAtMS) || len(k) != 14 { // 40 tokens in chunks of 3: 13 × 3 + 1
			t.Fatalf("%s: %d chunk counts for %d chunks", r.ID, len(k), len(r.TokenChunkAtMS))
		}
		sum := 0
		for _, n := range k {
			sum += n
		}
		if sum != 40 {
			t.Errorf("%s: chunk tokens sum to %d, want 40", r.ID, sum)
		}
		s, _ := ITLMillis(nil, r)
		total := 0.0
		for _, v := range s {
			total += v
		}
		if want := *r.LastTokenAtMS - *r.TTFOAtMS; !near(total, want) {
			t.Errorf("%s: ITL samples sum to %v ms, generation took %v ms", r.ID, total, want)
		}
		samples += len(s)
	}
	// 40 tokens minus the first chunk's 3, per request.
	if fig.ITLMS.Samples != samples || samples != 6*37 {
		t.Errorf("ITL samples %d (figures %d), want 6 × 37", samples, fig.ITLMS.Samples)
	}

	cfg.Workload.ContinuousUsage = false
	_, recs = runRecords(t, cfg)
	if fig := ComputeFigures(recs, FigureOptions{}); fig.ITLRequests != 0 || fig.ITLUnresolved != 6 || fig.ITLMS.Samples != 0 {
		t.Errorf("without per-chunk usage: resolved %d unresolved %d samples %d, want 0/6/0", fig.ITLRequests, fig.ITLUnresolved, fig.ITLMS.Samples)
	}
}

// TestDurationBound: with a dispatch window, the block sends until the window closes
// and its planned requests are the ones dispatched; the records sum to them.
func TestDurationBound(t *testing.T) {
	url := startSim(t, sim.Config{TimeScale: 0.02})
	for _, mode := range []string{ModeClosed, ModeOpen} {
		t.Run(mode, func(t *testing.T) {
			cfg := testConfig(url)
			cfg.Mode, cfg.Concurrency, cfg.Requests = mode, 2, 10000
			if mode == ModeOpen {
				cfg.Rate, cfg.Arrival = 40, ArrivalConstant
			}
			cfg.Duration, cfg.Timeout = 300*time.Millisecond, 20*time.Second
			res, recs := runRecords(t, cfg)
			if res.Requests < 2 || res.Requests >= 10000 || len(recs) != res.Requests || res.Outcomes[OK] != res.Requests {
				t.Fatalf("requests %d, %d records, outcomes %v", res.Requests, len(recs), res.Outcomes)
			}
			// A closed-loop request is dispatched (claimed) inside the window and
			// stamped right after; 5 ms is far more than the claim takes.
			for i, r := range recs {
				if r.SendAtMS == nil || *r.SendAtMS >= 305 {
					t.Errorf("request %d sent at %v ms, after the 300 ms window", i, r.SendAtMS)
				}
			}
			if mode == ModeOpen && res.Requests != 12 { // constant 40 req/s: offsets 0, 25, ..., 275 ms
				t.Errorf("open loop planned %d requests in 300 ms at 40 req/s, want 12", res.Requests)
			}
		})
	}
}
