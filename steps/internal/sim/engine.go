package sim

import (
	"container/list"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// engine is the scheduler and timing model shared by the live server and Predict. It never
// sleeps or reads the clock: callers pass "now" and get due times back, which is what lets
// Predict run the very same model in virtual time.
//
// The model:
//   - A request is admitted into the running batch when fewer than MaxRunning requests run
//     and the KV pool can reserve prompt + max_tokens for it (a lone request is always
//     admitted, so nothing waits forever); otherwise it waits in FIFO order.
//   - On admission the prefix cache says how many prompt tokens are reused, and the
//     prompt's blocks enter it at once (simpler than vLLM, which caches a block once it is
//     computed: here a twin prompt admitted mid-prefill already reuses them). The uncached
//     rest is prefilled on one of PrefillLanes prefill lanes (the one free first), in
//     admission order: it starts when that lane is free and lasts PrefillBase +
//     uncached/PrefillTokensPerSecond, stretched by PrefillSlowdownPerRunning for every
//     other running request. The first output token is due when that prefill ends.
//   - Each later token is due TPOTBase + TPOTPerRunning*(running-1) after the previous
//     one's due time, with running read when the gap is computed.
//   - Every duration carries the request's jitter, the slowdown fault and the time scale.
type engine struct {
	prof  Profile
	scale float64

	// running is written under mu and read without it on the per-token path.
	running atomic.Int64

	mu         sync.Mutex
	waiting    list.List // of *job, FIFO
	kvReserved int
	laneFreeAt []time.Time // per prefill lane
	cache      *prefixCache
	m          *metrics
}

func newEngine(p Profile, scale float64, m *metrics) *engine {
	return &engine{prof: p, scale: scale, cache: newPrefixCache(p.PrefixCacheTokens, p.BlockSize), m: m,
		laneFreeAt: make([]time.Time, max(p.PrefillLanes, 1))}
}

// job is one request's place in the engine.
type job struct {
	promptTokens int
	blocks       []uint64
	kvNeed       int
	timing       *rand.Rand // jitter draws, private to the request
	slow         float64

	// Set by the engine under its mutex.
	admitted  bool
	finished  bool
	waitElem  *list.Element
	cached    int
	arrivedAt time.Time
	firstDue  time.Time
	// ready, when not nil, is closed on admission; a waiting handler blocks on it.
	ready chan struct{}
}

// arrive registers j at now and reports whether it was admitted at once. If not, it is
// queued and a later finish admits it.
func (e *engine) arrive(j *job, now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	j.arrivedAt = now
	if e.waiting.Len() == 0 && e.fitsLocked(j) {
		e.admitLocked(j, now)
		return true
	}
	j.waitElem = e.waiting.PushBack(j)
	e.m.waiting.Store(int64(e.waiting.Len()))
	return false
}

func (e *engine) fitsLocked(j *job) bool {
	r := int(e.running.Load())
	if r >= e.prof.MaxRunning {
		return false
	}
	return r == 0 || e.kvReserved+j.kvNeed <= e.prof.KVCapacityTokens
}

func (e *engine) admitLocked(j *job, now time.Time) {
	running := e.running.Add(1)
	e.kvReserved += j.kvNeed
	j.admitted = true
	j.cached = e.cache.acquire(j.blocks, j.promptTokens)
	e.m.admitted(j.promptTokens, j.cached, e.cache.evictions)

	uncached := float64(j.promptTokens - j.cached)
	contention := 1 + e.prof.PrefillSlowdownPerRunning*float64(running-1)
	model := e.prof.PrefillBase.Seconds() + uncached/e.prof.PrefillTokensPerSecond*contention
	d := e.wall(model*jitter(j.timing, e.prof.PrefillJitter), j.slow)
	lane := 0
	for i, free := range e.laneFreeAt {
		if free.Before(e.laneFreeAt[lane]) {
			lane = i
		}
	}
	start := now
	if e.laneFreeAt[lane].After(start) {
		start = e.laneFreeAt[lane]
	}
	e.laneFreeAt[lane] = start.Add(d)
	j.firstDue = e.laneFreeAt[lane]
	if j.ready != nil {
		close(j.ready) // wakes a waiting handler; closing under mu keeps it exactly once
	}
}

// tokenGap is the time from one output token of j to its next, given the batch now.
func (e *engine) tokenGap(j *job) time.Duration {
	others := float64(e.running.Load() - 1)
	if others < 0 {
		others = 0
	}
	model := e.prof.TPOTBase.Seconds() + e.prof.TPOTPerRunning.Seconds()*others
	return e.wall(model*jitter(j.timing, e.prof.TokenJitter), j.slow)
}

// finish takes j out of the engine, whether it ran or was still waiting, and returns the
// jobs its departure admitted (already woken). Calling it twice is harmless.
func (e *engine) finish(j *job, now time.Time) []*job {
	e.mu.Lock()
	defer e.mu.Unlock()
	if j.finished {
		return nil
	}
	j.finished = true
	if !j.admitted {
		e.waiting.Remove(j.waitElem)
		e.m.waiting.Store(int64(e.waiting.Len()))
		return nil
	}
	e.running.Add(-1)
	e.kvReserved -= j.kvNeed
	var woken []*job
	for e.waiting.Len() > 0 {
		next := e.waiting.Front().Value.(*job)
		if !e.fitsLocked(next) {
			break
		}
		e.waiting.Remove(e.waiting.Front())
		next.waitElem = nil
		e.admitLocked(next, now)
		woken = append(woken, next)
	}
	e.m.waiting.Store(int64(e.waiting.Len()))
	return woken
}

// resetCache empties the prefix cache when no request is running or waiting, and
// otherwise returns how many are (and changes nothing).
func (e *engine) resetCache() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := int(e.running.Load()) + e.waiting.Len(); n > 0 {
		return n
	}
	evictions := e.cache.evictions
	e.cache = newPrefixCache(e.prof.PrefixCacheTokens, e.prof.BlockSize)
	e.cache.evictions = evictions
	return 0
}

// wall converts model seconds into a wall-clock duration under the time scale and slowdown.
func (e *engine) wall(modelSeconds, slow float64) time.Duration {
	return time.Duration(modelSeconds * slow * e.scale * float64(time.Second))
}

// jitter is a multiplicative noise factor uniform in [1-halfWidth, 1+halfWidth].
func jitter(r *rand.Rand, halfWidth float64) float64 {
	if halfWidth == 0 {
		return 1
	}
	return 1 + halfWidth*(2*r.Float64()-1)
}
