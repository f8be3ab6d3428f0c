package loadgen

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// FigureOptions choose what Figures reports besides its fixed set.
type FigureOptions struct {
	// Percentiles to report for every distribution, each in (0, 100].
	Percentiles []float64
	// SLOs of goodput; none means no goodput.
	SLOs []SLO
}

// DefaultPercentiles are reported when none are chosen.
var DefaultPercentiles = []float64{50, 90, 95, 99}

// Figures are the figures of one block that people compare across benchmark clients
// (vllm bench serve, AIPerf), each computed by a function of metrics.go from the
// block's records alone, so they can be recomputed from requests.jsonl.
//
// The latency distributions (TTFO, TTFT, TPOT, ITL, E2E) are over the requests with
// outcome ok, and each states its sample count next to Attempted, so that the
// failures stay visible in every population: a distribution of 98 samples out of
// 100 attempted says two requests are not in it.
type Figures struct {
	Attempted int `json:"attempted"` // the block's planned requests: every outcome
	Succeeded int `json:"succeeded"` // outcome ok
	Failed    int `json:"failed"`    // every other outcome
	// Completed requests' token totals (Completed: ok and no_visible_output).
	InputTokens  int     `json:"input_tokens"`
	OutputTokens int     `json:"output_tokens"`
	WallS        float64 `json:"wall_s"`

	RequestThroughput     float64 `json:"request_throughput_req_s"`      // RequestThroughput
	OutputTokenThroughput float64 `json:"output_token_throughput_tok_s"` // AggregateOutputTokPerS
	TotalTokenThroughput  float64 `json:"total_token_throughput_tok_s"`  // TotalTokenThroughput

	TTFOMS Stats `json:"ttfo_ms"` // TTFOMillis
	TTFTMS Stats `json:"ttft_ms"` // VisibleTTFTMillis
	TPOTMS Stats `json:"tpot_ms"` // TPOTMillis (capacity TPOT, one sample per request)
	ITLMS  Stats `json:"itl_ms"`  // ITLMillis (one sample per token after the first chunk)
	E2EMS  Stats `json:"e2e_ms"`  // E2EMillis
	// ITLRequests is how many ok requests gave ITL samples; ITLUnresolved how many
	// did not (no recorded chunks, or multi-token chunks without per-chunk usage).
	ITLRequests   int `json:"itl_requests"`
	ITLUnresolved int `json:"itl_unresolved"`

	Goodput *Goodput `json:"goodput"` // null without SLOs

	// Load: what the client achieved against what was asked.
	AchievedRequestRate *float64 `json:"achieved_request_rate_req_s"` // AchievedRequestRate; null under two sends
	Sent                int      `json:"sent"`                        // requests with a send stamp
	ScheduleLagMS       Stats    `json:"schedule_lag_ms"`             // send − scheduled
	MaxConcurrency      int      `json:"max_concurrency_observed"`    // MaxConcurrency
}

// Goodput is the requests that met every SLO (MeetsSLOs).
type Goodput struct {
	SLOs      []SLO   `json:"slos"`
	Good      int     `json:"good"`
	Attempted int     `json:"attempted"`
	Fraction  float64 `json:"fraction"` // good / attempted
	ReqPerS   float64 `json:"goodput_req_s"`
}

// ComputeFigures computes the Figures of a block's records.
func ComputeFigures(records []Record, o FigureOptions) Figures {
	ps := o.Percentiles
	if len(ps) == 0 {
		ps = DefaultPercentiles
	}
	res := Summarize(records)
	f := Figures{Attempted: len(records), WallS: res.WallS, MaxConcurrency: res.MaxConcurrencyObserved}
	var ttfo, ttft, tpot, itl, e2e, lag []float64
	add := func(dst *[]float64, fn func(Record) (float64, bool), r Record) {
		if v, ok := fn(r); ok {
			*dst = append(*dst, v)
		}
	}
	good := 0
	for _, r := range records {
		if r.SendAtMS != nil {
			f.Sent++
		}
		if r.ScheduleLagMS != nil {
			lag = append(lag, *r.ScheduleLagMS)
		}
		if MeetsSLOs(r, o.SLOs) {
			good++
		}
		if r.Outcome != OK {
			f.Failed++
			continue
		}
		f.Succeeded++
		add(&ttfo, TTFOMillis, r)
		add(&ttft, VisibleTTFTMillis, r)
		add(&tpot, TPOTMillis, r)
		add(&e2e, E2EMillis, r)
		var ok bool
		if itl, ok = ITLMillis(itl, r); ok {
			f.ITLRequests++
		} else {
			f.ITLUnresolved++
		}
	}
	f.InputTokens, f.OutputTokens = CompletedTokens(records)
	f.RequestThroughput = RequestThroughput(records, f.WallS)
	f.OutputTokenThroughput = AggregateOutputTokPerS(records, f.WallS)
	f.TotalTokenThroughput = TotalTokenThroughput(records, f.WallS)
	f.TTFOMS, f.TTFTMS, f.TPOTMS = Describe(ttfo, ps), Describe(ttft, ps), Describe(tpot, ps)
	f.ITLMS, f.E2EMS, f.ScheduleLagMS = Describe(itl, ps), Describe(e2e, ps), Describe(lag, ps)
	if v, ok := AchievedRequestRate(records); ok {
		f.AchievedRequestRate = &v
	}
	if len(o.SLOs) > 0 {
		g := &Goodput{SLOs: o.SLOs, Good: good, Attempted: len(records)}
		if len(records) > 0 {
			g.Fraction = float64(good) / float64(len(records))
		}
		if f.WallS > 0 {
			g.ReqPerS = float64(good) / f.WallS
		}
		f.Goodput = g
	}
	return f
}

// ErrorGroup is one distinct failure of a block: an outcome and a message, with how
// many requests had it and the first of them.
type ErrorGroup struct {
	Outcome      Outcome `json:"outcome"`
	Message      string  `json:"message"`
	Count        int     `json:"count"`
	FirstRequest string  `json:"first_request"`
}

// ErrorGroups groups the failed requests of records by outcome and message, most
// frequent first (ties: first seen first). The message of an HTTP error whose body is
// an OpenAI error object is its status, type and message ("HTTP 404 NotFoundError:
// The model `x` does not exist."), so the server's words lead; any other error is its
// recorded excerpt, less the socket addresses of transport errors.
func ErrorGroups(records []Record) []ErrorGroup {
	type key struct {
		o Outcome
		m string
	}
	idx := map[key]int{}
	var out []ErrorGroup
	for _, r := range records {
		if r.Outcome == OK {
			continue
		}
		k := key{r.Outcome, errorMessage(r)}
		if i, ok := idx[k]; ok {
			out[i].Count++
			continue
		}
		idx[k] = len(out)
		out = append(out, ErrorGroup{Outcome: r.Outcome, Message: k.m, Count: 1, FirstRequest: r.ID})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Count > out[j].Count })
	return out
}

// socketPair is the local->remote address pair Go's net errors name ("read tcp
// 127.0.0.1:58984->127.0.0.1:8000: i/o timeout"): the local port differs per
// connection, so failures that are one failure would never group.
var socketPair = regexp.MustCompile(`\b(tcp[46]?|udp[46]?) \S+->\S+?: `)

// errorMessage is the readable message of a failed record: without socket address
// pairs (requests.jsonl keeps them), and an HTTP error's OpenAI error object as its
// type and message.
func errorMessage(r Record) string {
	msg := socketPair.ReplaceAllString(r.Error, "$1: ")
	if r.Outcome != HTTPError || r.HTTPStatus == 0 {
		return msg
	}
	prefix := fmt.Sprintf("HTTP %d: ", r.HTTPStatus)
	body, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		return msg
	}
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &e) != nil || e.Error.Message == "" {
		return msg
	}
	if e.Error.Type != "" {
		return fmt.Sprintf("HTTP %d %s: %s", r.HTTPStatus, e.Error.Type, e.Error.Message)
	}
	return fmt.Sprintf("HTTP %d: %s", r.HTTPStatus, e.Error.Message)
}
