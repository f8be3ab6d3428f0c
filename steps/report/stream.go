package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
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
	Cached     int64
	CachedRep  int // records that reported cached_tokens
	EndMaxMS   float64
	MaxConc    int
	vals       [nMetrics][]float64
	prompts    []indexed // prompt tokens of every record with usage, by index
	Failures   []failedRequest
	FailedN    int
	// block medians of the successes
	TTFTp50, TPOTp50, Decodep50, E2Ep50 *float64
}

type indexed struct {
	idx int
	v   float64
}

// WallS is the block wall time: the latest end_at_ms (loadgen.Summarize's rule).
func (s *blockStats) WallS() float64 { return s.EndMaxMS / 1000 }

// AggregateTokS is Σ completion tokens / block wall time (loadgen's definition).
func (s *blockStats) AggregateTokS() float64 {
	if s.WallS() <= 0 {
		return 0
	}
	return float64(s.Completion) / s.WallS()
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
	st := &blockStats{Path: rel, Outcomes: map[loadgen.Outcome]int{}}
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
		if r.Usage != nil {
			st.Completion += int64(r.Usage.CompletionTokens)
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
			fr := failedRequest{ID: r.ID, Block: addr, Outcome: r.Outcome, HTTPStatus: r.HTTPStatus,
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

// scanAll streams the requests.jsonl of every block with a settled attempt, a few
// blocks at a time. Results are attached to the blocks; order is the plan's.
func scanAll(ev *evidence) error {
	var jobs []*blockRef
	for _, b := range ev.blocks {
		if b.attemptDir() == "" {
			continue
		}
		if _, ok := b.artefact("requests.jsonl"); ok {
			jobs = append(jobs, b)
		}
	}
	workers := min(runtime.GOMAXPROCS(0), 4)
	var mu sync.Mutex
	var firstErr error
	ch := make(chan *blockRef)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range ch {
				a, _ := b.artefact("requests.jsonl")
				st, err := scanBlock(ev.dir, a.Path, b.Addr)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if st != nil {
					st.HashOK = st.SHA256 == a.SHA256
					b.stats = st
				}
				mu.Unlock()
			}
		}()
	}
	for _, b := range jobs {
		ch <- b
	}
	close(ch)
	wg.Wait()
	for _, b := range jobs {
		if b.stats != nil && !b.stats.HashOK {
			a, _ := b.artefact("requests.jsonl")
			ev.problems = append(ev.problems, fmt.Sprintf("%s: sha256 %s, journal recorded %s", a.Path, b.stats.SHA256, a.SHA256))
		}
	}
	return firstErr
}
