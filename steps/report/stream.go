package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/rigor-bench/rigor/steps/internal/agent"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// The per-request figures kept for each visible success, in this order.
const (
	mTTFO = iota
	mTTFT
	mTPOT
	mE2E
	mDecode
	mPrefill
	mPrompt
	mCompletion
	nMetrics
)

var metricNames = [nMetrics]string{"time_to_first_output_ms", "ttft_ms", "tpot_ms", "e2e_ms", "decode_tok_s", "effective_prefill_tok_s", "prompt_tokens", "completion_tokens"}

// maxFailuresKept bounds the failed requests listed per block; the count is exact.
const maxFailuresKept = 200

// failedRequest is one failed request as the failures section lists it.
type failedRequest struct {
	ID               string
	Index            int
	Block            string
	Outcome          loadgen.Outcome
	FinishReason     string
	HTTPStatus       int
	PromptTokens     *int
	CompletionTokens *int
	ReasoningTokens  *int
	ReasoningChunks  int
	ContentChunks    int
	Error            string
}

// blockStats is what one block's requests.jsonl says, reduced to what the report
// needs. vals holds the per-request figures of visible successes only.
type blockStats struct {
	Path       string
	SHA256     string
	Bytes      int64
	HashOK     bool // matches the journal's record
	Attempted  int
	OK         int
	Outcomes   map[loadgen.Outcome]int
	Completion int64 // Σ completion tokens over every record with usage
	// CompletedTokens is Σ completion tokens of the completed requests
	// (loadgen.Completed): the population of the throughput.
	CompletedTokens int64
	Cached          int64
	CachedRep       int // records that reported cached_tokens
	EndMaxMS        float64
	MaxConc         int
	vals            [nMetrics][]float64
	prompts         []indexed // prompt tokens of every record with usage, by index
	Failures        []failedRequest
	FailedN         int
	seen            map[int]bool // request indexes that left a record
	// What the validity checks need (validity.go).
	PromptSum     int64          // Σ usage.prompt_tokens over records with usage
	Finish        map[string]int // records by finish_reason, whatever their outcome
	E2EChecked    int            // visible successes with ≥ 2 completion tokens
	E2EViolations int            // of them, E2E off TTFO + TPOT·(n-1) by more than the tolerance
	E2EMaxResidMS float64        // largest |E2E - (TTFO + TPOT·(n-1))|
	SendSpanMS    [2]float64     // first and last send_at_ms
	SchedSpanMS   [2]float64     // first and last scheduled_at_ms
	// block medians of the successes
	TTFTp50, TPOTp50, Decodep50, E2Ep50 *float64
}

type indexed struct {
	idx int
	v   float64
}

// WallS is the block wall time: the latest end_at_ms (loadgen.Summarize's rule).
func (s *blockStats) WallS() float64 { return s.EndMaxMS / 1000 }

// AggregateTokS is Σ completion tokens of the completed requests / block wall
// time: loadgen.AggregateOutputTokPerS, the figure the block's result.json holds.
// A failed request's tokens are not in it (Completion counts them, for energy and
// the comparison with the engine's own counter).
func (s *blockStats) AggregateTokS() float64 {
	if s.WallS() <= 0 {
		return 0
	}
	return float64(s.CompletedTokens) / s.WallS()
}

// scanBlock streams one requests.jsonl. It keeps nothing per record beyond the
// float64 figures and the failures.
func scanBlock(stateDir, rel, addr string) (*blockStats, error) {
	f, err := os.Open(filepath.Join(stateDir, filepath.FromSlash(rel)))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	cr := &countingHasher{h: h}
	st := &blockStats{Path: rel, Outcomes: map[loadgen.Outcome]int{}, seen: map[int]bool{}, Finish: map[string]int{},
		SendSpanMS: [2]float64{math.Inf(1), math.Inf(-1)}, SchedSpanMS: [2]float64{math.Inf(1), math.Inf(-1)}}
	sc := bufio.NewScanner(io.TeeReader(f, cr))
	sc.Buffer(make([]byte, 0, 256<<10), 16<<20)
	type edge struct {
		t float64
		d int8
	}
	var edges []edge
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		if len(raw) == 0 {
			continue
		}
		var r loadgen.Record
		if err := decodeRecord(raw, &r); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", rel, line, err)
		}
		st.Attempted++
		st.Outcomes[r.Outcome]++
		st.seen[r.Index] = true
		if r.FinishReason != nil {
			st.Finish[*r.FinishReason]++
		}
		if r.SendAtMS != nil {
			st.SendSpanMS[0], st.SendSpanMS[1] = math.Min(st.SendSpanMS[0], *r.SendAtMS), math.Max(st.SendSpanMS[1], *r.SendAtMS)
		}
		if r.ScheduledAtMS != nil {
			st.SchedSpanMS[0], st.SchedSpanMS[1] = math.Min(st.SchedSpanMS[0], *r.ScheduledAtMS), math.Max(st.SchedSpanMS[1], *r.ScheduledAtMS)
		}
		if r.Usage != nil {
			st.PromptSum += int64(r.Usage.PromptTokens)
			st.Completion += int64(r.Usage.CompletionTokens)
			if loadgen.Completed(r.Outcome) {
				st.CompletedTokens += int64(r.Usage.CompletionTokens)
			}
			st.prompts = append(st.prompts, indexed{r.Index, float64(r.Usage.PromptTokens)})
			if r.Usage.CachedTokens != nil {
				st.Cached += int64(*r.Usage.CachedTokens)
				st.CachedRep++
			}
		}
		if r.EndAtMS != nil && *r.EndAtMS > st.EndMaxMS {
			st.EndMaxMS = *r.EndAtMS
		}
		if r.SendAtMS != nil {
			end := math.Inf(1)
			if r.EndAtMS != nil {
				end = *r.EndAtMS
			}
			edges = append(edges, edge{*r.SendAtMS, 1}, edge{end, -1})
		}
		if r.Outcome == loadgen.OK {
			st.OK++
			add := func(m int, v float64, ok bool) {
				if ok {
					st.vals[m] = append(st.vals[m], v)
				}
			}
			v, ok := loadgen.TTFOMillis(r)
			add(mTTFO, v, ok)
			st.checkE2E(r)
			v, ok = loadgen.VisibleTTFTMillis(r)
			add(mTTFT, v, ok)
			v, ok = loadgen.TPOTMillis(r)
			add(mTPOT, v, ok)
			v, ok = loadgen.E2EMillis(r)
			add(mE2E, v, ok)
			v, ok = loadgen.DecodeTokPerS(r)
			add(mDecode, v, ok)
			v, ok = loadgen.EffectivePrefillTokPerS(r)
			add(mPrefill, v, ok)
			if r.Usage != nil {
				add(mPrompt, float64(r.Usage.PromptTokens), true)
				add(mCompletion, float64(r.Usage.CompletionTokens), true)
			}
			continue
		}
		st.FailedN++
		if len(st.Failures) < maxFailuresKept {
			fr := failedRequest{ID: r.ID, Index: r.Index, Block: addr, Outcome: r.Outcome, HTTPStatus: r.HTTPStatus,
				ReasoningChunks: r.ReasoningChunks, ContentChunks: r.ContentChunks, Error: excerpt(r.Error, 160)}
			if r.FinishReason != nil {
				fr.FinishReason = *r.FinishReason
			}
			if r.Usage != nil {
				p, c := r.Usage.PromptTokens, r.Usage.CompletionTokens
				fr.PromptTokens, fr.CompletionTokens, fr.ReasoningTokens = &p, &c, r.Usage.ReasoningTokens
			}
			st.Failures = append(st.Failures, fr)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", rel, err)
	}
	st.SHA256, st.Bytes = hex.EncodeToString(h.Sum(nil)), cr.n
	sort.Slice(edges, func(i, j int) bool {
		if edges[i].t != edges[j].t {
			return edges[i].t < edges[j].t
		}
		return edges[i].d < edges[j].d
	})
	cur := 0
	for _, e := range edges {
		cur += int(e.d)
		st.MaxConc = max(st.MaxConc, cur)
	}
	sort.Slice(st.prompts, func(i, j int) bool { return st.prompts[i].idx < st.prompts[j].idx })
	sort.Slice(st.Failures, func(i, j int) bool { return st.Failures[i].ID < st.Failures[j].ID })
	st.TTFTp50 = median(st.vals[mTTFT])
	st.TPOTp50 = median(st.vals[mTPOT])
	st.Decodep50 = median(st.vals[mDecode])
	st.E2Ep50 = median(st.vals[mE2E])
	return st, nil
}

// median returns the type-7 median of xs without modifying it.
func median(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	v := loadgen.Percentile(s, 0.5)
	return &v
}

type countingHasher struct {
	h hash.Hash
	n int64
}

func (c *countingHasher) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.h.Write(p)
}

func excerpt(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// scanAll streams the requests.jsonl of every attempt of every block, a few at a
// time: the settling attempt's and also those of attempts a crash or a signal
// interrupted, whose records stay in the cell's population. A file the journal
// recorded is checked against its hash; one an attempt left without an end record
// is read as found and reported as unrecorded. Order is the plan's.
func scanAll(ev *evidence) error {
	type job struct {
		b    *blockRef
		a    *attemptRef
		rel  string
		want string // recorded sha256; "" when the journal has none
	}
	var jobs []job
	for _, b := range ev.blocks {
		for _, a := range b.attempts {
			if art, ok := a.artefact("requests.jsonl"); ok {
				jobs = append(jobs, job{b, a, art.Path, art.SHA256})
				continue
			}
			rel := a.Dir + "/requests.jsonl"
			if a.End == nil && a.Dir != "" {
				if _, err := os.Stat(filepath.Join(ev.dir, filepath.FromSlash(rel))); err == nil {
					jobs = append(jobs, job{b, a, rel, ""})
				}
			}
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	var mu sync.Mutex
	var firstErr error
	ch := make(chan job)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				st, err := scanBlock(ev.dir, j.rel, j.b.Addr)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if st != nil {
					st.HashOK = j.want != "" && st.SHA256 == j.want
					j.a.stats = st
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	for _, j := range jobs {
		st := j.a.stats
		switch {
		case st == nil:
		case j.want == "":
			ev.problems = append(ev.problems, fmt.Sprintf("%s: attempt %d of %s has no end record, so its files are read as found (sha256 %s) and no journal hash covers them", j.rel, j.a.N, j.b.Addr, st.SHA256))
		case !st.HashOK:
			ev.problems = append(ev.problems, fmt.Sprintf("%s: sha256 %s, journal recorded %s", j.rel, st.SHA256, j.want))
		}
	}
	for _, b := range ev.blocks {
		for _, a := range b.attempts {
			ev.readResult(a)
		}
		for _, a := range b.attempts {
			a.Declared = declared(b, a)
			if a.stats != nil && a.Declared > a.stats.Attempted {
				a.Missing = a.Declared - a.stats.Attempted
				a.stats.addMissing(a.Missing, b.Addr)
			} else if a.stats == nil && !a.settled() && a.Declared > 0 && a.Dir != "" {
				// An attempt that died before its first record: every declared
				// request is a cancelled failure of its population.
				a.stats = &blockStats{Path: a.Dir + "/requests.jsonl", Outcomes: map[loadgen.Outcome]int{}}
				a.Missing = a.Declared
				a.stats.addMissing(a.Missing, b.Addr)
			}
		}
		if s := b.settling(); s != nil {
			b.stats = s.stats
		}
	}
	return firstErr
}

// readResult reads an attempt's result.json when it has one.
func (ev *evidence) readResult(a *attemptRef) {
	rel := a.Dir + "/result.json"
	if art, ok := a.artefact("result.json"); ok {
		rel = art.Path
	} else if a.End != nil || a.Dir == "" {
		return
	}
	// A block step's result.json adds the engine and model its requests used.
	var r struct {
		loadgen.Result
		Engine string        `json:"engine"`
		Model  string        `json:"model"`
		Agents *agent.Report `json:"agents"`
		Cache  *blockCache   `json:"cache"`
		Corpus *blockCorpus  `json:"corpus"`
	}
	if ev.readJSON(rel, &r) == nil {
		a.result, a.engine, a.model, a.agents, a.cache, a.corpus = &r.Result, r.Engine, r.Model, r.Agents, r.Cache, r.Corpus
	}
}

// declared is the number of requests an attempt was to send: the plan's count when
// it was known at freeze, else the attempt's own result.json, else another
// attempt's result.json or the settling end record's outputs (a count the freeze
// step decided after the pilot). 0 when nothing says.
func declared(b *blockRef, a *attemptRef) int {
	if n, err := strconv.Atoi(b.Requests); err == nil && n > 0 {
		return n
	}
	if a.result != nil && a.result.Requests > 0 {
		return a.result.Requests
	}
	for _, x := range b.attempts {
		if x.result != nil && x.result.Requests > 0 {
			return x.result.Requests
		}
	}
	for _, x := range b.attempts {
		if x.End == nil || len(x.End.Outputs) == 0 {
			continue
		}
		var out struct {
			Requests float64 `json:"requests"`
		}
		if json.Unmarshal(x.End.Outputs, &out) == nil && out.Requests > 0 && x.settled() {
			return int(out.Requests)
		}
	}
	return 0
}

// addMissing counts requests that never left a record as cancelled failures, so
// that the attempt's denominator is what it declared (seed 001: no request is
// retried or replaced; every failed attempt stays in its population).
func (s *blockStats) addMissing(n int, addr string) {
	s.Attempted += n
	s.FailedN += n
	s.Outcomes[loadgen.Cancelled] += n
	added := 0
	for i := 0; added < n && len(s.Failures) < maxFailuresKept; i++ {
		if s.seen[i] {
			continue
		}
		s.Failures = append(s.Failures, failedRequest{ID: fmt.Sprintf("index %d (no record)", i), Index: i, Block: addr, Outcome: loadgen.Cancelled,
			Error: "the attempt ended before this request completed; no record was written"})
		added++
	}
}
