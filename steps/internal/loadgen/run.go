package loadgen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"syscall"
	"time"
)

// Sentinel errors, checked with errors.Is.
var (
	// ErrBlockBound: the block hard bound (Config.Timeout) was hit before every
	// request finished. The Result is still returned, with Incomplete set.
	ErrBlockBound = errors.New("loadgen: block hard bound exceeded")
	// ErrWarmup: the connection pool could not be opened; nothing was sent.
	ErrWarmup = errors.New("loadgen: connection warm-up failed")
	// ErrWrite: a record could not be written to the output.
	ErrWrite = errors.New("loadgen: writing requests.jsonl")
)

// Run executes one block and writes one JSON line per request to out as each
// request finishes (unsent requests are written at the end). It returns the Result
// whenever the block started, also together with ErrBlockBound, a context error or
// ErrWrite; it returns a nil Result only when the config is invalid or the warm-up
// failed, in which case nothing was sent.
func Run(ctx context.Context, cfg Config, out io.Writer) (*Result, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	// Everything that costs CPU and does not need the clock happens first: prompts
	// are generated, encoded and rendered into the exact request bytes, and every
	// connection is dialled, before the block starts.
	// An open loop's schedule is known before the clock: with a dispatch window, the
	// requests scheduled at or after it are not planned, and not rendered. A closed
	// loop renders Requests, the most it may send.
	planned := cfg.Requests
	var offsets []time.Duration
	if cfg.Mode == ModeOpen {
		offsets = arrivals(cfg)
		if cfg.Duration > 0 {
			planned = sort.Search(len(offsets), func(i int) bool { return offsets[i] >= cfg.Duration })
			offsets = offsets[:planned]
		}
	}
	// A slice keeps its own requests of the block's one schedule: index holds their
	// block indices, and everything below counts in positions of this run.
	var index []int
	if s := cfg.Slice; s != nil {
		var mine []time.Duration
		for i := range planned {
			if s.Owns(i) {
				index = append(index, i)
				if offsets != nil {
					mine = append(mine, offsets[i])
				}
			}
		}
		planned, offsets = len(index), mine
	}
	reqs := make([][]byte, planned)
	rendered := 0
	for j := range reqs {
		i := j
		if index != nil {
			i = index[j]
		}
		b, err := cfg.renderRequest(i)
		if err != nil {
			return nil, fmt.Errorf("%w: request %d: %w", ErrConfig, i, err)
		}
		if rendered += len(b); rendered > maxRenderedBytes {
			return nil, fmt.Errorf("%w: %d requests of about %d bytes each would hold more than %d GiB in memory once rendered; send fewer", ErrConfig, planned, len(b), maxRenderedBytes>>30)
		}
		reqs[j] = b
	}

	p, err := newPool(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	conns := cfg.connections()
	if err := p.warmUp(ctx, conns); err != nil {
		return nil, err
	}
	defer p.close()
	// A collection inside the block is a stall charged to whichever request it
	// hits: collect the setup garbage now, and let the heap grow further before the
	// next collection while the block runs.
	runtime.GC()
	defer debug.SetGCPercent(debug.SetGCPercent(400))

	r := &runner{
		cfg:     cfg,
		pool:    p,
		reqs:    reqs,
		index:   index,
		out:     out,
		records: make([]Record, len(reqs)),
		filled:  make([]bool, len(reqs)),
	}
	// One worker state per connection, each with its buffers, made before the clock.
	workers := make([]*worker, conns)
	for i := range workers {
		workers[i] = newWorker(p.take())
	}
	defer func() {
		for _, w := range workers {
			w.closeConn()
		}
	}()

	var at time.Time
	if cfg.StartAt != nil {
		if at, err = cfg.StartAt(); err != nil {
			return nil, err
		}
	}
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	// The block clock: one time.Now gives both the UTC anchor and the monotonic
	// origin, so the anchor is exact at offset 0. A given start moves both readings
	// to that instant (at carries no monotonic reading: the shift is on the wall
	// clock), and the run waits for it.
	cpu0 := processCPU()
	now := time.Now()
	if !at.IsZero() {
		now = now.Add(at.Sub(now))
		time.Sleep(time.Until(now))
	}
	r.origin = now
	anchors := &Anchors{Before: Anchor{UTC: now.UTC().Round(0), MonoMS: 0}}
	blockCtx, cancel := context.WithCancel(ctx)
	if cfg.Timeout > 0 {
		blockCtx, cancel = context.WithTimeout(ctx, cfg.Timeout)
	}
	defer cancel()
	r.blockCtx = blockCtx

	if cfg.Mode == ModeOpen {
		r.openLoop(offsets, workers)
	} else {
		r.closedLoop(workers)
	}
	// With a dispatch window, the planned requests are the ones dispatched (a
	// prefix of the indices: claims are ordered, see claim); the rest were never
	// part of the block.
	if cfg.Duration > 0 && cfg.Mode != ModeOpen {
		r.records, r.filled = r.records[:r.claimed], r.filled[:r.claimed]
	}
	// Requests never sent still get a record: the outcome table must sum to the
	// planned requests whatever happened.
	for i := range r.records {
		if !r.filled[i] {
			rec := r.base(i)
			if offsets != nil && offsets[i] <= time.Since(r.origin) {
				rec.ScheduledAtMS = r.at(r.origin.Add(offsets[i]))
			}
			rec.Outcome = Cancelled
			rec.Error = "not sent: " + r.cancelReason()
			r.finish(i, rec)
		}
	}
	after := time.Now()
	blockCPU := processCPU() - cpu0
	anchors.After = Anchor{UTC: after.UTC().Round(0), MonoMS: durMS(after.Sub(r.origin))}

	res := Summarize(r.records)
	res.Concurrency = cfg.Concurrency
	res.SlotSecondsPerRequest = SlotSecondsPerRequest(res.WallS, res.Requests, conns)
	res.Anchors = anchors
	res.BlockCPUS = blockCPU.Seconds()
	d := p.snapshot()
	res.Dial = &d

	var errs []error
	if res.Incomplete {
		if ctx.Err() != nil {
			errs = append(errs, fmt.Errorf("loadgen: block cancelled: %w", ctx.Err()))
		} else {
			errs = append(errs, fmt.Errorf("%w: %s after %s", ErrBlockBound, cfg.Timeout, time.Since(r.origin).Round(time.Millisecond)))
		}
	}
	if r.writeErr != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrWrite, r.writeErr))
	}
	return &res, errors.Join(errs...)
}

// arrivals returns the open-loop send offsets. They are deterministic (seeded by the
// corpus seed and repetition) so a rerun replays the same schedule.
func arrivals(cfg Config) []time.Duration {
	rng := rand.New(rand.NewPCG(uint64(cfg.Workload.CorpusSeed), uint64(cfg.Repetition)))
	out := make([]time.Duration, cfg.Requests)
	var t float64 // seconds
	for i := range out {
		out[i] = time.Duration(t * float64(time.Second))
		if cfg.Arrival == ArrivalConstant {
			t = float64(i+1) / cfg.Rate
		} else {
			t += rng.ExpFloat64() / cfg.Rate
		}
	}
	return out
}

type runner struct {
	cfg      Config
	pool     *pool
	reqs     [][]byte // rendered requests, by position
	index    []int    // a slice's block index of each position; nil: the position is the index
	origin   time.Time
	blockCtx context.Context

	mu       sync.Mutex // guards out, writeErr, records, filled
	out      io.Writer
	writeErr error
	records  []Record
	filled   []bool

	claimMu sync.Mutex // guards claimed
	claimed int        // closed loop: indices handed out so far
}

// claim hands out the next request index of the closed loop, or false once every
// request is claimed, the block is over, or the dispatch window (Config.Duration)
// has closed. Claiming and checking the window under one lock keeps the claimed
// indices a prefix: no index is skipped while a later one is sent.
func (r *runner) claim() (int, bool) {
	r.claimMu.Lock()
	defer r.claimMu.Unlock()
	if r.claimed >= len(r.records) || r.blockCtx.Err() != nil {
		return 0, false
	}
	if r.cfg.Duration > 0 && time.Since(r.origin) >= r.cfg.Duration {
		return 0, false
	}
	r.claimed++
	return r.claimed - 1, true
}

// closedLoop runs Concurrency workers; each sends its next request as soon as its
// previous one is done, until every request has been claimed.
func (r *runner) closedLoop(workers []*worker) {
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for {
				i, ok := r.claim()
				if !ok {
					return
				}
				r.finish(i, r.do(w, i, time.Now()))
			}
		})
	}
	wg.Wait()
}

// openLoop dispatches request i at origin+offsets[i], with at most Concurrency in
// flight. A request that waits for a free slot keeps its scheduled time, so the wait
// shows up as schedule lag and in its latencies.
func (r *runner) openLoop(offsets []time.Duration, workers []*worker) {
	// The free workers are the slots: a request takes one, with its connection.
	slots := make(chan *worker, len(workers))
	for _, w := range workers {
		slots <- w
	}
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
dispatch:
	for i, off := range offsets {
		sched := r.origin.Add(off)
		if wait := time.Until(sched); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-r.blockCtx.Done():
				break dispatch
			}
		}
		var w *worker
		select {
		case w = <-slots:
		case <-r.blockCtx.Done():
			break dispatch
		}
		wg.Go(func() {
			defer func() { slots <- w }()
			r.finish(i, r.do(w, i, sched))
		})
	}
	wg.Wait()
}

// finish stores a record and writes it out.
func (r *runner) finish(i int, rec Record) {
	line, err := json.Marshal(rec)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records[i] = rec
	r.filled[i] = true
	if err == nil {
		_, err = r.out.Write(append(line, '\n'))
	}
	if err != nil && r.writeErr == nil {
		r.writeErr = err
	}
	if r.cfg.OnRecord != nil {
		r.cfg.OnRecord(rec)
	}
}

func (r *runner) cancelReason() string {
	if errors.Is(context.Cause(r.blockCtx), context.DeadlineExceeded) {
		return "block hard bound reached"
	}
	return "block cancelled"
}

// base is the record of the request at position j, under its block index.
func (r *runner) base(j int) Record {
	i := j
	if r.index != nil {
		i = r.index[j]
	}
	return Record{
		ID: r.cfg.RequestID(i), Index: i, Repetition: r.cfg.Repetition,
		Concurrency: r.cfg.Concurrency, NominalContext: r.cfg.Workload.NominalContext,
	}
}

// at converts a monotonic instant to a block offset in ms.
func (r *runner) at(t time.Time) *float64 {
	v := durMS(t.Sub(r.origin))
	return &v
}

// processCPU is this process's user plus system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
