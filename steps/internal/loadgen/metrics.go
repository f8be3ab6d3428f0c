package loadgen

import (
	"math"
	"sort"
)

// This file is the one place where every block figure is defined (STYLE habit 21).
// The definitions are seed 000's; the wire-level moments they use are defined on
// Record. A per-request figure returns ok=false when its inputs are absent, so a
// request that lacks a figure is left out of that figure's samples, never counted as
// zero.

// PercentileMethod names the percentile estimator used everywhere in this package.
const PercentileMethod = "linear interpolation between closest ranks (Hyndman-Fan type 7, NumPy default)"

// DescriptiveBelow is the sample count under which a distribution is flagged
// descriptive (seed 000: a C1 p99 over 52 requests is descriptive only).
const DescriptiveBelow = 100

// TTFOMillis is the time to first output token of any kind:
//
//	TTFO = ttfo_at − scheduled_at
//
// where the first output token is the first chunk with non-empty content, reasoning,
// reasoning_content or tool_calls. A role-only first chunk is not output.
func TTFOMillis(r Record) (float64, bool) { return diff(r.TTFOAtMS, r.ScheduledAtMS) }

// VisibleTTFTMillis is the time to the first visible token:
//
//	visible TTFT = ttft_visible_at − scheduled_at
//
// where visible means non-empty content or tool_calls (reasoning is not visible).
func VisibleTTFTMillis(r Record) (float64, bool) {
	return diff(r.TTFTVisibleAtMS, r.ScheduledAtMS)
}

// E2EMillis is the end-to-end latency from the scheduled send time to the last token:
//
//	E2E = last_token − scheduled
//
// It ends at the last token-bearing chunk: the usage chunk and [DONE] that follow
// carry no token and must not lengthen it. Measuring from the schedule rather than
// the actual send keeps client queueing in the figure (no coordinated omission); in a
// closed loop the two differ by the schedule lag only. A request that streamed no
// token has no E2E; when its stream ended is StreamEndMillis.
func E2EMillis(r Record) (float64, bool) { return diff(r.LastTokenAtMS, r.ScheduledAtMS) }

// StreamEndMillis is the time from the scheduled send to the end of the stream:
//
//	stream end = end − scheduled
//
// where end is [DONE], the failure, or the cancellation.
func StreamEndMillis(r Record) (float64, bool) { return diff(r.EndAtMS, r.ScheduledAtMS) }

// CapacityTPOT is seed 000's capacity time per output token:
//
//	TPOT = (last_token − TTFO) / (completion_tokens − 1)
//
// It is generation duration divided by the completion tokens after the first, not a
// distribution of token gaps (chunks can carry several tokens). It needs
// completion_tokens ≥ 2 and a positive generation duration.
func CapacityTPOT(lastTokenAtMS, ttfoAtMS float64, completionTokens int) (float64, bool) {
	if completionTokens < 2 {
		return 0, false
	}
	gen := lastTokenAtMS - ttfoAtMS
	if gen <= 0 {
		return 0, false
	}
	return gen / float64(completionTokens-1), true
}

// TPOTMillis applies CapacityTPOT to a record.
func TPOTMillis(r Record) (float64, bool) {
	if r.LastTokenAtMS == nil || r.TTFOAtMS == nil || r.Usage == nil {
		return 0, false
	}
	return CapacityTPOT(*r.LastTokenAtMS, *r.TTFOAtMS, r.Usage.CompletionTokens)
}

// DecodeTokPerS is the inverse of capacity TPOT:
//
//	decode tok/s = 1000 / TPOT_ms
func DecodeTokPerS(r Record) (float64, bool) {
	tpot, ok := TPOTMillis(r)
	if !ok {
		return 0, false
	}
	return 1000 / tpot, true
}

// EffectivePrefill is seed 000's effective prefill rate:
//
//	effective prefill tok/s = prompt_tokens / TTFO_s
//
// TTFO includes queueing and network time, hence "effective". Seed 003: prompt 7682
// with TTFO 840 ms gives about 9.1K tok/s.
func EffectivePrefill(promptTokens int, ttfoMS float64) (float64, bool) {
	if promptTokens <= 0 || ttfoMS <= 0 {
		return 0, false
	}
	return float64(promptTokens) / (ttfoMS / 1000), true
}

// EffectivePrefillTokPerS applies EffectivePrefill to a record.
func EffectivePrefillTokPerS(r Record) (float64, bool) {
	ttfo, ok := TTFOMillis(r)
	if !ok || r.Usage == nil {
		return 0, false
	}
	return EffectivePrefill(r.Usage.PromptTokens, ttfo)
}

// Completed reports whether a request's stream ran to the end the server meant it to
// have: outcome ok, or no_visible_output (a complete stream, with usage, whose tokens
// were all reasoning, e.g. a reasoning-only length exhaustion). Every other outcome
// is a request that failed.
func Completed(o Outcome) bool { return o == OK || o == NoVisibleOutput }

// AggregateOutputTokPerS is the block's output throughput:
//
//	aggregate output tok/s = Σ completion_tokens of completed requests / block wall time
//
// The sum runs over the completed requests (Completed), visible or not: a
// reasoning-only length exhaustion generated its tokens within the wall time too.
// Tokens streamed by requests that failed are not in it; FailedOutputTokens counts
// them apart.
func AggregateOutputTokPerS(records []Record, wallS float64) float64 {
	if wallS <= 0 {
		return 0
	}
	total := 0
	for _, r := range records {
		if Completed(r.Outcome) && r.Usage != nil {
			total += r.Usage.CompletionTokens
		}
	}
	return float64(total) / wallS
}

// FailedOutputTokens counts the tokens streamed by requests that failed (not
// Completed), which the aggregate throughput leaves out while their time is in its
// wall time:
//
//	failed output tokens = Σ over failed requests of
//	    usage.completion_tokens   when the request reported usage,
//	    token_chunks              otherwise
//
// A token chunk carries at least one token, so a request counted from its chunks is
// counted at or below what it streamed: fromChunks is how many requests were counted
// that way, and the sum is exact only when fromChunks is zero.
func FailedOutputTokens(records []Record) (tokens, fromChunks int) {
	for _, r := range records {
		if Completed(r.Outcome) {
			continue
		}
		if r.Usage != nil {
			tokens += r.Usage.CompletionTokens
			continue
		}
		if r.TokenChunks > 0 {
			tokens += r.TokenChunks
			fromChunks++
		}
	}
	return tokens, fromChunks
}

// SecondsPerRequest is the pilot figure used to size request counts:
//
//	seconds_per_request = wall_s / requests
//
// so that the seed-001 rule count = ceil_multiple(120 s / seconds_per_request, C)
// reproduces "16 × 120 s / pilot elapsed" (C1 = 52, C4 = 160).
func SecondsPerRequest(wallS float64, requests int) float64 {
	if requests <= 0 {
		return 0
	}
	return wallS / float64(requests)
}

// SlotSecondsPerRequest is the time one concurrency slot spends per request:
//
//	slot_seconds_per_request = wall_s / requests × concurrency
//
// It approaches the mean E2E when the slots are kept busy.
func SlotSecondsPerRequest(wallS float64, requests, concurrency int) float64 {
	return SecondsPerRequest(wallS, requests) * float64(concurrency)
}

// Dist is a percentile summary. Values are null when there are no samples.
type Dist struct {
	Samples     int      `json:"samples"`
	P50         *float64 `json:"p50"`
	P95         *float64 `json:"p95"`
	P99         *float64 `json:"p99"`
	Descriptive bool     `json:"descriptive"` // samples < DescriptiveBelow
}

// Percentile is the type-7 estimate of quantile q (0..1) of sorted xs:
//
//	h = (n − 1) q;  x[⌊h⌋] + (h − ⌊h⌋)(x[⌊h⌋+1] − x[⌊h⌋])
func Percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Summarise returns the percentile summary of xs (xs is not modified).
func Summarise(xs []float64) Dist {
	d := Dist{Samples: len(xs), Descriptive: len(xs) < DescriptiveBelow}
	if len(xs) == 0 {
		return d
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	p := func(q float64) *float64 { v := Percentile(s, q); return &v }
	d.P50, d.P95, d.P99 = p(0.50), p(0.95), p(0.99)
	return d
}

// MaxConcurrency is the largest number of requests in flight at once, from the
// records' [send, end] intervals. An end at the same instant as a send is counted
// first, so back-to-back requests of one closed-loop slot count once.
func MaxConcurrency(records []Record) int {
	type edge struct {
		t     float64
		delta int
	}
	var edges []edge
	for _, r := range records {
		if r.SendAtMS == nil {
			continue
		}
		end := math.Inf(1)
		if r.EndAtMS != nil {
			end = *r.EndAtMS
		}
		edges = append(edges, edge{*r.SendAtMS, 1}, edge{end, -1})
	}
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].delta < edges[j].delta
	})
	cur, max := 0, 0
	for _, e := range edges {
		cur += e.delta
		if cur > max {
			max = cur
		}
	}
	return max
}

func diff(a, b *float64) (float64, bool) {
	if a == nil || b == nil {
		return 0, false
	}
	return *a - *b, true
}
