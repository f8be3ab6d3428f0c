package loadgen

import (
	"time"
)

// Timing is the set of per-request distributions of one population (successes or
// failures; never mixed).
type Timing struct {
	Requests             int  `json:"requests"` // records in the population
	TTFOMS               Dist `json:"ttfo_ms"`
	TTFTMS               Dist `json:"ttft_ms"`       // visible TTFT
	TPOTMS               Dist `json:"tpot_ms"`       // capacity TPOT
	E2EMS                Dist `json:"e2e_ms"`        // to the last token
	StreamEndMS          Dist `json:"stream_end_ms"` // to the end of the stream
	DecodeTokS           Dist `json:"decode_tok_s"`
	EffectivePrefillTokS Dist `json:"effective_prefill_tok_s"`
	PromptTokens         Dist `json:"prompt_tokens"`
	CompletionTokens     Dist `json:"completion_tokens"`
}

// Anchor ties a wall-clock reading to the block's monotonic origin. Both readings
// come from one time.Now call.
type Anchor struct {
	UTC    time.Time `json:"utc"`
	MonoMS float64   `json:"mono_ms"`
}

// Anchors bracket the block: any UTC-stamped event from elsewhere (a server log, a
// trace) can be placed on the block's monotonic axis within their drift.
type Anchors struct {
	Before Anchor `json:"before"`
	After  Anchor `json:"after"`
}

// DialStats records connection setup, kept apart from request timings.
type DialStats struct {
	Warm         int       `json:"warm"`           // connections dialed before the block clock
	WarmMS       []float64 `json:"warm_ms"`        // their dial (and TLS) durations
	InBlock      int       `json:"in_block"`       // connections dialed during the block
	InBlockMS    []float64 `json:"in_block_ms"`    // e.g. after a server closed an idle one
	InBlockFails int       `json:"in_block_fails"` // failed dials during the block
}

// Result is result.json of one block.
type Result struct {
	Requests         int             `json:"requests"` // attempted = planned; the outcome table sums to it
	Concurrency      int             `json:"concurrency"`
	Outcomes         map[Outcome]int `json:"outcomes"` // every class present, zero included
	VisibleSuccesses int             `json:"visible_successes"`
	// VisibleSuccessRate = visible_successes / requests (the failure denominator).
	VisibleSuccessRate float64    `json:"visible_success_rate"`
	WallS              float64    `json:"wall_s"`
	Anchors            *Anchors   `json:"anchors,omitempty"` // Run only
	Dial               *DialStats `json:"dial,omitempty"`    // Run only

	PercentileMethod string `json:"percentile_method"`
	Successes        Timing `json:"successes"` // outcome ok only
	Failures         Timing `json:"failures"`  // every other outcome

	// AggregateOutputTokS counts completed requests only; the tokens of requests
	// that failed mid-stream are FailedOutputTokens, over the same wall time.
	AggregateOutputTokS float64 `json:"aggregate_output_tok_s"`
	FailedOutputTokens  int     `json:"failed_output_tokens"`
	FailedOutputTokS    float64 `json:"failed_output_tok_s"`
	// FailedOutputTokensFromChunks is how many failed requests had no usage, so
	// their tokens were counted from their token chunks (a lower bound).
	FailedOutputTokensFromChunks int `json:"failed_output_tokens_from_chunks"`

	MaxConcurrencyObserved int     `json:"max_concurrency_observed"`
	ScheduleLagMS          Dist    `json:"schedule_lag_ms"`
	SecondsPerRequest      float64 `json:"seconds_per_request"`
	SlotSecondsPerRequest  float64 `json:"slot_seconds_per_request"`
	Incomplete             bool    `json:"incomplete"` // some request was cancelled
	// BlockCPUS is this process's CPU time (user + system) between the block clock's
	// start and end: the client's cost, plus anything else the process runs.
	BlockCPUS float64 `json:"block_cpu_s,omitempty"`
}

// Summarize computes everything in Result that the records alone determine, so a
// report can recompute result.json from requests.jsonl. Run calls it too, then adds
// anchors and dial stats.
//
// The block wall time is the latest end_at_ms: the block origin is offset 0 and the
// block is over when its last request has ended.
func Summarize(records []Record) Result {
	res := Result{
		Requests:         len(records),
		Outcomes:         map[Outcome]int{},
		PercentileMethod: PercentileMethod,
	}
	for _, o := range Outcomes() {
		res.Outcomes[o] = 0
	}
	var ok, failed []Record
	var lags []float64
	var endMS float64
	for _, r := range records {
		res.Outcomes[r.Outcome]++
		if r.Concurrency > res.Concurrency {
			res.Concurrency = r.Concurrency
		}
		if r.Outcome == OK {
			ok = append(ok, r)
		} else {
			failed = append(failed, r)
		}
		if r.Outcome == Cancelled {
			res.Incomplete = true
		}
		if r.ScheduleLagMS != nil {
			lags = append(lags, *r.ScheduleLagMS)
		}
		if r.EndAtMS != nil && *r.EndAtMS > endMS {
			endMS = *r.EndAtMS
		}
	}
	res.VisibleSuccesses = len(ok)
	if len(records) > 0 {
		res.VisibleSuccessRate = float64(len(ok)) / float64(len(records))
	}
	res.WallS = endMS / 1000
	res.Successes = timing(ok)
	res.Failures = timing(failed)
	res.AggregateOutputTokS = AggregateOutputTokPerS(records, res.WallS)
	res.FailedOutputTokens, res.FailedOutputTokensFromChunks = FailedOutputTokens(records)
	if res.WallS > 0 {
		res.FailedOutputTokS = float64(res.FailedOutputTokens) / res.WallS
	}
	res.MaxConcurrencyObserved = MaxConcurrency(records)
	res.ScheduleLagMS = Summarise(lags)
	res.SecondsPerRequest = SecondsPerRequest(res.WallS, len(records))
	res.SlotSecondsPerRequest = SlotSecondsPerRequest(res.WallS, len(records), res.Concurrency)
	return res
}

func timing(records []Record) Timing {
	var ttfo, ttft, tpot, e2e, end, dec, pre, pt, ct []float64
	add := func(dst *[]float64, f func(Record) (float64, bool), r Record) {
		if v, ok := f(r); ok {
			*dst = append(*dst, v)
		}
	}
	for _, r := range records {
		add(&ttfo, TTFOMillis, r)
		add(&ttft, VisibleTTFTMillis, r)
		add(&tpot, TPOTMillis, r)
		add(&e2e, E2EMillis, r)
		add(&end, StreamEndMillis, r)
		add(&dec, DecodeTokPerS, r)
		add(&pre, EffectivePrefillTokPerS, r)
		if r.Usage != nil {
			pt = append(pt, float64(r.Usage.PromptTokens))
			ct = append(ct, float64(r.Usage.CompletionTokens))
		}
	}
	return Timing{
		Requests: len(records),
		TTFOMS:   Summarise(ttfo), TTFTMS: Summarise(ttft), TPOTMS: Summarise(tpot), E2EMS: Summarise(e2e), StreamEndMS: Summarise(end),
		DecodeTokS: Summarise(dec), EffectivePrefillTokS: Summarise(pre),
		PromptTokens: Summarise(pt), CompletionTokens: Summarise(ct),
	}
}
