package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Salts separate the per-request RNG streams, so that, for example, changing a fault rate
// never changes the words or the timing jitter a request gets.
const (
	saltLength uint64 = iota + 1
	saltContent
	saltTiming
	saltFaults
)

// reasoningShares is the nominal fraction of a chat completion spent reasoning for each
// reasoning_effort. Effort changes the split, not the total, so the output-length
// distribution the profiles were fitted with holds whatever effort a workload asks for.
var reasoningShares = map[string]float64{
	"none":    0,
	"minimal": 0.05,
	"low":     0.15,
	"medium":  0.30,
	"high":    0.45,
	"max":     0.60,
	"xhigh":   0.60,
}

// defaultReasoningEffort applies when a request names none (seed 000: an omitted field
// means the server's default, not a client override).
const defaultReasoningEffort = "medium"

// faultKind is the one stream-level failure a request suffers, if any.
type faultKind int

const (
	faultNone faultKind = iota
	faultHTTP
	faultCut
	faultInband
	faultHang
	faultAbort
)

// requestPlan is everything about a request decided before it is scheduled.
type requestPlan struct {
	seed       uint64
	total      int // tokens to generate, reasoning first
	reasoning  int
	finish     string
	fault      faultKind
	faultAfter int // tokens sent before the fault fires (clamped to total)
	omitUsage  bool
}

// seedFor mixes the server seed with a request key (FNV-1a), giving each request its own
// reproducible RNG streams.
func seedFor(serverSeed uint64, key string) uint64 {
	h := uint64(14695981039346656037) ^ serverSeed
	h *= 1099511628211
	for i := 0; i < len(key); i++ {
		h = (h ^ uint64(key[i])) * 1099511628211
	}
	return h
}

func newRNG(seed, salt uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, salt)) }

// lengthRequest is what a request asks of its output length besides max_tokens:
// vLLM's and SGLang's min_tokens and ignore_eos sampling parameters.
type lengthRequest struct {
	minTokens int  // the end of sequence is suppressed until this many tokens
	ignoreEOS bool // the end of sequence is ignored: generate until max_tokens
}

// planRequest draws the natural output length and reasoning split, applies min_tokens,
// ignore_eos and max_tokens, and decides faults. chat is false for /v1/completions,
// which has no reasoning channel.
//
// As vLLM's sampler does: with ignore_eos the request generates max_tokens tokens and
// finishes with "length"; with min_tokens a natural completion shorter than that is
// extended to min_tokens (finish "stop", or "length" when that is max_tokens). So
// min_tokens = max_tokens, or ignore_eos, gives an exact completion length.
func planRequest(p Profile, f Faults, seed uint64, maxTokens int, effort string, chat bool, want lengthRequest) (requestPlan, error) {
	share := 0.0
	if chat {
		if effort == "" {
			effort = defaultReasoningEffort
		}
		s, ok := reasoningShares[effort]
		if !ok {
			return requestPlan{}, fmt.Errorf("reasoning_effort %q is not one of none, minimal, low, medium, high, max, xhigh", effort)
		}
		share = s
	}

	lr := newRNG(seed, saltLength)
	natural := int(math.Round(math.Exp(math.Log(p.OutputMedianTokens) + p.OutputSigma*lr.NormFloat64())))
	natural = max(natural, 1)
	if share > 0 {
		// Spread the split a little so reasoning length is not a fixed fraction.
		share = min(max(share+0.1*(2*lr.Float64()-1), 0), 0.95)
	}
	plan := requestPlan{seed: seed, total: natural, reasoning: int(math.Round(share * float64(natural))), finish: finishStop}

	// All fault draws happen, always in this order, so each decision depends only on its own rate.
	fr := newRNG(seed, saltFaults)
	uHTTP, uCut, uInband, uHang, uExhaust, uUsage := fr.Float64(), fr.Float64(), fr.Float64(), fr.Float64(), fr.Float64(), fr.Float64()
	uAbort := fr.Float64() // drawn last, so adding it changed no earlier decision
	if chat && uExhaust < f.ReasoningExhaustionRate {
		plan.total, plan.reasoning = maxTokens, maxTokens
	}
	switch {
	case want.ignoreEOS:
		plan.total = maxTokens
	case plan.total < want.minTokens:
		plan.total = want.minTokens
	}
	if plan.total >= maxTokens {
		plan.total, plan.finish = maxTokens, finishLength
	}
	plan.reasoning = min(plan.reasoning, plan.total)
	switch {
	case uHTTP < f.HTTPErrorRate:
		plan.fault = faultHTTP
	case uCut < f.StreamCutRate:
		plan.fault, plan.faultAfter = faultCut, f.StreamCutAfter
	case uInband < f.InbandErrorRate:
		plan.fault, plan.faultAfter = faultInband, f.InbandErrorAfter
	case uHang < f.HangRate:
		plan.fault, plan.faultAfter = faultHang, f.HangAfter
	case uAbort < f.AbortRate:
		plan.fault, plan.faultAfter = faultAbort, f.AbortAfter
	}
	plan.faultAfter = min(plan.faultAfter, plan.total)
	plan.omitUsage = uUsage < f.OmitUsageRate
	return plan, nil
}

// Words the simulator "generates". Plain ASCII letters, so they need no JSON escaping and
// each is exactly one token.
var (
	reasoningWords = []string{"consider", "the", "request", "first", "then", "check", "whether", "each", "step",
		"holds", "so", "we", "need", "to", "verify", "assume", "case", "because", "therefore", "recall",
		"compare", "options", "wait", "actually", "next", "constraint", "implies", "given", "hence", "plan",
		"outline", "summary"}
	contentWords = []string{"the", "report", "shows", "that", "throughput", "and", "latency", "stay", "within",
		"bounds", "for", "each", "block", "while", "cache", "reuse", "remains", "low", "across", "arms",
		"results", "are", "summarised", "below", "with", "counts", "per", "request", "in", "order", "of", "arrival"}
)

// wordSource produces the request's words, deterministic from its seed.
type wordSource struct{ r *rand.Rand }

func (ws wordSource) next(reasoning bool) string {
	if reasoning {
		return reasoningWords[ws.r.IntN(len(reasoningWords))]
	}
	return contentWords[ws.r.IntN(len(contentWords))]
}
