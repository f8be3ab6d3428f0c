package loadgen

import (
	"encoding/json"
	"math"
	"sort"
	"sync"

	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// This file is the one place where every block figure is defined (STYLE habit 21).
// The definitions are seed 000's; the wire-level moments they use are defined on
// Record. A per-request figure returns ok=false when its inputs are absent, so a
// request that lacks a figure is left out of that figure's samples, never counted as
// zero.

// PercentileMethod names the percentile estimator used everywhere in this package.
const PercentileMethod = "linear interpolation between closest ranks (Hyndman-Fan type 7, NumPy default)"

// Descriptive reports whether the p-percentile (0 < p < 1) of n samples is
// descriptive only: n is below the count that certifies it at one-sided
// stats.CertifyConfidence (stats.CertifiedMin, MLPerf LoadGen's early stopping: 11
// for p50, 130 for p95, 662 for p99). It is the one rule behind every descriptive
// mark: result.json, rigor bench, rigor calibrate and the report.
func Descriptive(p float64, n int) bool {
	return n < CertifiedFrom(p)
}

var (
	certifiedMu   sync.Mutex
	certifiedSeen = map[float64]int{}
)

// CertifiedFrom is the sample count from which the p-percentile (0 < p < 1) is
// certified: stats.CertifiedMin at stats.CertifyConfidence, cached because the
// search for p99.9 walks thousands of counts and a bench asks per cell.
func CertifiedFrom(p float64) int {
	certifiedMu.Lock()
	defer certifiedMu.Unlock()
	n, ok := certifiedSeen[p]
	if !ok {
		n = stats.CertifiedMin(p, stats.CertifyConfidence)
		certifiedSeen[p] = n
	}
	return n
}

// distPercentiles are the percentiles a Dist carries, by name.
var distPercentiles = []struct {
	name string
	p    float64
}{{"p50", 0.50}, {"p95", 0.95}, {"p99", 0.99}}

// NewDist is the Dist of n samples before its values are filled in: which of its
// percentiles are descriptive (Descriptive).
func NewDist(n int) Dist {
	d := Dist{Samples: n, DescriptivePercentiles: []string{}}
	for _, q := range distPercentiles {
		if Descriptive(q.p, n) {
			d.DescriptivePercentiles = append(d.DescriptivePercentiles, q.name)
		}
	}
	d.Descriptive = len(d.DescriptivePercentiles) > 0
	return d
}

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
	_, completion := CompletedTokens(records)
	return float64(completion) / wallS
}

// CompletedTokens sums the usage of the completed requests (Completed), the
// population of every token throughput.
func CompletedTokens(records []Record) (prompt, completion int) {
	for _, r := range records {
		if Completed(r.Outcome) && r.Usage != nil {
			prompt += r.Usage.PromptTokens
			completion += r.Usage.CompletionTokens
		}
	}
	return prompt, completion
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
	Samples int      `json:"samples"`
	P50     *float64 `json:"p50"`
	P95     *float64 `json:"p95"`
	P99     *float64 `json:"p99"`
	// Descriptive is true when any of the three is descriptive (Descriptive);
	// DescriptivePercentiles names them ("p50", "p95", "p99").
	Descriptive            bool     `json:"descriptive"`
	DescriptivePercentiles []string `json:"descriptive_percentiles"`
}

// MarshalJSON writes the descriptive marks as the samples make them (NewDist),
// whatever the struct holds: a Dist built by hand cannot claim other marks.
func (d Dist) MarshalJSON() ([]byte, error) {
	type plain Dist
	m := NewDist(d.Samples)
	d.Descriptive, d.DescriptivePercentiles = m.Descriptive, m.DescriptivePercentiles
	return json.Marshal(plain(d))
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
	d := NewDist(len(xs))
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

// Figures that `rigor bench` reports beside the block figures, named as vllm bench
// serve and AIPerf name theirs where the definitions agree (README: "rigor bench vs
// vllm bench serve vs AIPerf" says where they differ).

// ITLMillis appends to dst the inter-token latencies of one request, one sample per
// token after the first token chunk:
//
//	for each token chunk i ≥ 1 carrying k_i tokens: k_i samples of (t_i − t_{i−1}) / k_i
//
// where t_i is the chunk's arrival (token_chunk_at_ms). A chunk of k tokens is k
// tokens, not one: a speculative-decoding or batched stream does not look k times
// faster. k_i comes from per-chunk usage (token_chunk_tokens, with
// stream_options.continuous_usage_stats) as the completion tokens reported since the
// previous token chunk. Without per-chunk usage, every chunk is one token when the
// request's completion_tokens is at most its token chunks + 1 (one token, the
// end-of-sequence, may be counted without being streamed); otherwise the request's
// tokens cannot be placed in time and ok is false (unresolved), as it is when a
// chunk reports no new token. With k_0 = 1 the samples sum to the generation
// duration, so their mean over one request is its capacity TPOT.
func ITLMillis(dst []float64, r Record) ([]float64, bool) {
	at := r.TokenChunkAtMS
	if len(at) == 0 || r.Usage == nil {
		return dst, false
	}
	k := r.TokenChunkTokens
	switch {
	case len(k) == len(at):
		for _, n := range k {
			if n < 1 {
				return dst, false
			}
		}
	case len(k) == 0 && r.Usage.CompletionTokens <= len(at)+1:
	default:
		return dst, false
	}
	for i := 1; i < len(at); i++ {
		n := 1
		if k != nil {
			n = k[i]
		}
		gap := (at[i] - at[i-1]) / float64(n)
		for range n {
			dst = append(dst, gap)
		}
	}
	return dst, true
}

// RequestThroughput is the successful requests per second:
//
//	request throughput = requests with outcome ok / wall_s
func RequestThroughput(records []Record, wallS float64) float64 {
	if wallS <= 0 {
		return 0
	}
	n := 0
	for _, r := range records {
		if r.Outcome == OK {
			n++
		}
	}
	return float64(n) / wallS
}

// TotalTokenThroughput is the prompt and completion tokens of the completed requests
// per second of wall time:
//
//	total token throughput = Σ (prompt_tokens + completion_tokens) of completed requests / wall_s
//
// over the same requests as AggregateOutputTokPerS (Completed).
func TotalTokenThroughput(records []Record, wallS float64) float64 {
	if wallS <= 0 {
		return 0
	}
	prompt, completion := CompletedTokens(records)
	return float64(prompt+completion) / wallS
}

// AchievedRequestRate is the rate at which the client actually sent:
//
//	achieved request rate = (sent − 1) / (last send_at − first send_at)
//
// over the requests that were sent (send_at set). It is the same estimator as the
// rate of a schedule ((n − 1) arrivals over the span from the first to the last), so
// it compares with the offered --rate directly; a lower figure means requests waited
// for the concurrency ceiling (their lag is ScheduleLagMS). ok is false with fewer
// than two sends or a zero span.
func AchievedRequestRate(records []Record) (float64, bool) {
	first, last, n := math.Inf(1), math.Inf(-1), 0
	for _, r := range records {
		if r.SendAtMS == nil {
			continue
		}
		n++
		first, last = math.Min(first, *r.SendAtMS), math.Max(last, *r.SendAtMS)
	}
	if n < 2 || last <= first {
		return 0, false
	}
	return float64(n-1) / ((last - first) / 1000), true
}

// SLO is one service level objective of goodput: a per-request figure and its bound.
type SLO struct {
	Metric string  `json:"metric"` // a key of SLOMetrics
	MaxMS  float64 `json:"max_ms"`
}

// SLOMetrics are the per-request figures an SLO may bound: visible TTFT, TTFO,
// capacity TPOT and E2E, as defined above.
var SLOMetrics = map[string]func(Record) (float64, bool){
	"ttft": VisibleTTFTMillis,
	"ttfo": TTFOMillis,
	"tpot": TPOTMillis,
	"e2e":  E2EMillis,
}

// MeetsSLOs reports whether a request counts toward goodput: outcome ok and, for
// every SLO, its figure present and at most the bound. A failed request never does,
// and neither does one without the figure (a one-token completion has no TPOT), so
// goodput keeps every attempted request in its denominator:
//
//	goodput = requests meeting every SLO / wall_s;  good fraction = those / attempted
func MeetsSLOs(r Record, slos []SLO) bool {
	if r.Outcome != OK {
		return false
	}
	for _, s := range slos {
		f := SLOMetrics[s.Metric]
		if f == nil {
			return false
		}
		v, ok := f(r)
		if !ok || v > s.MaxMS {
			return false
		}
	}
	return true
}

// Stats is the summary of one figure over a population, in the shape vllm bench
// serve and AIPerf print: mean, standard deviation, min, max and chosen percentiles.
// Std is the population standard deviation (divisor n, NumPy's np.std default,
// which vllm bench serve uses). Percentiles use PercentileMethod. Values are null
// without samples.
type Stats struct {
	Samples     int               `json:"samples"`
	Mean        *float64          `json:"mean"`
	Std         *float64          `json:"std"`
	Min         *float64          `json:"min"`
	Max         *float64          `json:"max"`
	Percentiles []PercentileValue `json:"percentiles"`
	Descriptive bool              `json:"descriptive"` // some percentile is descriptive
}

// PercentileValue is one percentile p (0..100) of a Stats; Descriptive when the
// samples are fewer than certify it (Descriptive).
type PercentileValue struct {
	P           float64  `json:"p"`
	Value       *float64 `json:"value"`
	Descriptive bool     `json:"descriptive"`
}

// Describe summarises xs (not modified) with the percentiles ps (each 0..100).
//
//	mean = Σx / n;  std = sqrt(Σ(x − mean)² / n)
func Describe(xs []float64, ps []float64) Stats {
	st := Stats{Samples: len(xs), Percentiles: make([]PercentileValue, len(ps))}
	for i, p := range ps {
		st.Percentiles[i].P = p
		st.Percentiles[i].Descriptive = Descriptive(p/100, len(xs))
		st.Descriptive = st.Descriptive || st.Percentiles[i].Descriptive
	}
	if len(xs) == 0 {
		return st
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	ss := 0.0
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	v := func(x float64) *float64 { return &x }
	st.Mean, st.Std, st.Min, st.Max = v(mean), v(math.Sqrt(ss/float64(len(s)))), v(s[0]), v(s[len(s)-1])
	for i, p := range ps {
		st.Percentiles[i].Value = v(Percentile(s, p/100))
	}
	return st
}
