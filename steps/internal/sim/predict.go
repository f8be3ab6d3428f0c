package sim

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Workload is a closed-loop load for Predict: Concurrency clients each send their next
// request as soon as the previous one finishes, Requests in all, every prompt unique.
type Workload struct {
	Concurrency     int
	Requests        int
	PromptTokens    int
	MaxTokens       int    // 0 means MaxModelLen - PromptTokens, like an absent max_tokens
	ReasoningEffort string // "" means the server default
	Seed            uint64
}

// Prediction is what the timing model says a Workload will measure, per request in send
// order and as medians. TTFT here is time to the first output token of any kind (TTFO),
// and TPOT is capacity TPOT: (last token - first token) / (completion tokens - 1).
type Prediction struct {
	TTFT, TPOT             []time.Duration
	CompletionTokens       []int
	MedianTTFT, MedianTPOT time.Duration
	// Elapsed is the virtual time from the first send to the last token.
	Elapsed time.Duration
}

// Predict runs the server's own scheduler and timing model for w in virtual time, without
// sleeping and at time scale 1. Request i uses the request key "predict-<i>", so its output
// length is the one a live server with the same seed gives X-Request-Id "predict-<i>".
func Predict(p Profile, w Workload) (Prediction, error) {
	if err := p.Validate(); err != nil {
		return Prediction{}, err
	}
	if w.Concurrency < 1 || w.Requests < 1 || w.PromptTokens < 1 {
		return Prediction{}, errors.New("predict: concurrency, requests and prompt tokens must be >= 1")
	}
	maxTokens := w.MaxTokens
	if maxTokens == 0 {
		maxTokens = p.MaxModelLen - w.PromptTokens
	}
	if maxTokens < 1 {
		return Prediction{}, fmt.Errorf("predict: no room for output: prompt %d tokens, max_model_len %d", w.PromptTokens, p.MaxModelLen)
	}

	eng := newEngine(p, 1, newMetrics())
	epoch := time.Unix(0, 0)
	var (
		q       eventQueue
		sent    int
		pred    = Prediction{TTFT: make([]time.Duration, w.Requests), TPOT: make([]time.Duration, w.Requests), CompletionTokens: make([]int, w.Requests)}
		firstAt = make([]time.Duration, w.Requests)
		jobs    = make([]*job, w.Requests)
		plans   = make([]requestPlan, w.Requests)
	)
	send := func(at time.Duration) error {
		i := sent
		sent++
		seed := seedFor(w.Seed, requestIDKey("predict-"+strconv.Itoa(i)))
		plan, err := planRequest(p, Faults{}, seed, maxTokens, w.ReasoningEffort, true, lengthRequest{})
		if err != nil {
			return err
		}
		// Unique prompts: block hashes no other request shares.
		blocks := make([]uint64, w.PromptTokens/p.BlockSize)
		for b := range blocks {
			blocks[b] = seedFor(seed, "block-"+strconv.Itoa(b))
		}
		j := &job{promptTokens: w.PromptTokens, blocks: blocks, kvNeed: w.PromptTokens + maxTokens,
			timing: newRNG(seed, saltTiming), slow: 1}
		jobs[i], plans[i] = j, plan
		if eng.arrive(j, epoch.Add(at)) {
			heap.Push(&q, event{at: j.firstDue.Sub(epoch), req: i})
		}
		pred.TTFT[i] = -at // completed when the first token is due
		return nil
	}
	for c := 0; c < w.Concurrency && sent < w.Requests; c++ {
		if err := send(0); err != nil {
			return Prediction{}, err
		}
	}
	for q.Len() > 0 {
		ev := heap.Pop(&q).(event)
		i, j := ev.req, jobs[ev.req]
		if ev.token == 0 {
			pred.TTFT[i] += ev.at
			firstAt[i] = ev.at
		}
		if ev.token < plans[i].total-1 {
			heap.Push(&q, event{at: ev.at + eng.tokenGap(j), req: i, token: ev.token + 1})
			continue
		}
		n := plans[i].total
		pred.CompletionTokens[i] = n
		if n > 1 {
			pred.TPOT[i] = (ev.at - firstAt[i]) / time.Duration(n-1)
		}
		pred.Elapsed = max(pred.Elapsed, ev.at)
		for _, woken := range eng.finish(j, epoch.Add(ev.at)) {
			k := slices.Index(jobs, woken)
			heap.Push(&q, event{at: woken.firstDue.Sub(epoch), req: k})
		}
		if sent < w.Requests {
			if err := send(ev.at); err != nil {
				return Prediction{}, err
			}
		}
	}
	pred.MedianTTFT = medianDuration(pred.TTFT)
	pred.MedianTPOT = medianDuration(pred.TPOT)
	return pred, nil
}

func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// event is "token number token of request req is due at at".
type event struct {
	at    time.Duration
	req   int
	token int
}

// eventQueue orders events by due time, then by request, so the simulation is deterministic.
type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(a, b int) bool {
	if q[a].at != q[b].at {
		return q[a].at < q[b].at
	}
	return q[a].req < q[b].req
}
func (q eventQueue) Swap(a, b int) { q[a], q[b] = q[b], q[a] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
