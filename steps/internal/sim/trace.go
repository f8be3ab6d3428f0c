package sim

import (
	"fmt"
	"math"
	"math/bits"
	mrand "math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"
)

// The scheduler-trace capture endpoint, POST /debug/scheduler-trace?duration=1s: for a
// bounded window the server records one sample per scheduler frame, derived from its
// own timing model, and answers with one JSON document
// (schemas/trace-capture.schema.json).
//
// What a sample holds follows seed 000: the runtime graph (index into the capture's
// graph table, kind, shape, capacities), the scheduled physical lane count, the queued
// flag (another executor frame was outstanding at submission), physical
// slot/generation handles (not HTTP request IDs), selection, commit and
// completion-observation times, one GPU interval per tensor-parallel rank, and the
// retained shape-cost observation used at selection with its age, freshness and
// refresh origin. Times are nanoseconds from a process-local monotonic origin;
// before/after anchors pair that clock with UTC, each read as two separate clock
// reads, as an instrumented runtime reads them.
//
// The frame model (all durations are model time, multiplied by Config.TimeScale):
//
//   - Both built-in profiles are TP2, MTP3 (three draft tokens per lane per step).
//     A decode frame runs a "speculative" graph whose shape is BxD: B the captured
//     batch capacity (a power of two at or above the running lanes), D the draft
//     tokens. Its host wall interval (selection to completion observation) is the
//     profile's TPOT at the running batch times traceTokensPerStep, the mean
//     tokens a lane keeps per step. For the flare profile at C4 that is 22.73 ms:
//     seed 002's median host wall interval (44 samples in a 1 s capture).
//   - Host overhead inside the host wall interval (selection to commit, commit to
//     launch, the second rank's later start, last rank end to the completion
//     observation) is 46 µs, so the max-rank GPU interval is about 22.68 ms there
//     (seed 002: 22.683 ms). Every frame carries a common ±2% jitter (both ranks
//     stall together), and each rank its own normal(0, 5 µs) deviation: the
//     median rank spread is about 4.8 µs (seed 002: 4.736 µs).
//   - The next frame is selected 4 µs after the previous one is observed complete.
//   - A frame that admits a new lane is a "mixed" graph (shape BxD+p2048, a prefill
//     chunk beside the decode lanes, 1.35× the GPU time). The scheduler selects it
//     while the previous frame is still outstanding, so it is queued; its ranks
//     start only when the previous frame's end on that rank.
//   - Retained shape-cost observations live as long as the server: each completed
//     frame refreshes its graph's cost (max-rank GPU time when the frame was
//     queued, otherwise max(max-rank GPU time, host wall), as the cost estimator
//     measures it; that is also the sample's source_equivalent_cost_ns). A
//     selection uses its graph's latest observation made before it (a queued
//     frame is selected before the frame ahead of it is observed): refresh origin
//     "completion", fresh when it is at most 100 ms old. A graph that no frame has
//     completed yet uses its capture-time estimate: refresh origin "estimate",
//     freshness "unobserved", prior_observation_present false.
//   - Graph indices are the server's: a graph keeps its index across captures, and a
//     capture's graph table lists the graphs its samples use.
//   - Random draws come from a generator seeded with Config.Seed and the capture's
//     number on this server.
//
// Faults.TraceDropRate drops samples (their sequence numbers stay consumed and
// dropped_samples counts them); Faults.TraceOverflow shrinks the buffer so the capture
// overflows. Either makes the capture incomplete.

// Trace buffer limits and the simulated topology.
const (
	TraceCapacity         = 16384 // samples one capture holds
	TraceOverflowCapacity = 64    // the buffer under Faults.TraceOverflow
	TraceMaxDuration      = 60 * time.Second
	TraceRanks            = 2 // tensor parallel ranks of the simulated stack
	TraceDraftTokens      = 3 // MTP3: draft tokens per lane per speculative step
	traceTick             = time.Millisecond
	traceMinGap           = 10 * time.Microsecond // floor on a frame at tiny time scales
	tracePrefillChunk     = 2048
	// traceTokensPerStep is the mean number of tokens a lane keeps per speculative
	// step (one plus the accepted drafts): a frame lasts TPOT × this.
	traceTokensPerStep = 1.6178
	traceFrameJitter   = 0.02 // half-width of the common relative jitter of a frame
	traceMixedStretch  = 1.35 // GPU time of a mixed frame relative to a decode frame
	traceQueuedLead    = 0.3  // a queued frame is selected this share of a frame early
	// Host overheads and the per-rank deviation, model time.
	traceSelectToCommit  = 12 * time.Microsecond
	traceCommitToLaunch  = 10 * time.Microsecond
	traceRankStagger     = 2 * time.Microsecond  // rank r starts r × this after launch
	traceObserveDelay    = 22 * time.Microsecond // last rank end to the completion observation
	traceObserveToSelect = 4 * time.Microsecond  // a completion observation to the next selection
	traceRankSigma       = 5 * time.Microsecond
	traceFreshFor        = 100 * time.Millisecond
)

// Refresh origins and freshness of a retained observation.
const (
	TraceOriginCompletion = "completion"
	TraceOriginEstimate   = "estimate"
	TraceFresh            = "fresh"
	TraceStale            = "stale"
	TraceUnobserved       = "unobserved"
)

// traceOrigin is the process-local origin of every *_ns time in a capture.
var traceOrigin = time.Now()

func monoNS(t time.Time) int64 { return int64(t.Sub(traceOrigin)) }

// traceMemory is what the simulated runtime keeps between captures: its graph table
// and the last cost observation of each graph.
type traceMemory struct {
	mu       sync.Mutex
	captures uint64
	profiles uint64 // simulated Nsight captures (kernels.go)
	graphs   map[string]TraceGraph
	retained map[int][]retainedCost // the last two observations per graph, oldest first
}

type retainedCost struct {
	costNS, observedNS int64
}

var traceMemories sync.Map // *Server -> *traceMemory

func (s *Server) traceMemory() *traceMemory {
	v, _ := traceMemories.LoadOrStore(s, &traceMemory{graphs: map[string]TraceGraph{}, retained: map[int][]retainedCost{}})
	return v.(*traceMemory)
}

// TraceAnchor pairs the capture's monotonic clock with UTC at one moment.
type TraceAnchor struct {
	MonoNS int64  `json:"mono_ns"`
	UTC    string `json:"utc"`
}

// TraceGraph is one runtime graph; token/prefill capacities are capacities, not the
// tokens a frame actually carried.
type TraceGraph struct {
	Index           int    `json:"index"`
	Kind            string `json:"kind"` // speculative or mixed
	Shape           string `json:"shape"`
	BatchCapacity   int    `json:"batch_capacity"`
	TokenCapacity   int    `json:"token_capacity"`
	PrefillCapacity int    `json:"prefill_capacity"`
}

// TraceSample is one scheduler frame.
type TraceSample struct {
	Seq                     int               `json:"seq"`
	Graph                   int               `json:"graph"`
	ScheduledLanes          int               `json:"scheduled_lanes"`
	Queued                  bool              `json:"queued"`
	Requests                []TraceSlot       `json:"requests"`
	SelectedAtNS            int64             `json:"selected_at_ns"`
	CommittedAtNS           int64             `json:"committed_at_ns"`
	CompletionObservedAtNS  int64             `json:"completion_observed_at_ns"`
	HostWallNS              int64             `json:"host_wall_ns"`
	RetainedNS              int64             `json:"retained_ns"`
	Selection               TraceSelection    `json:"selection"`
	Ranks                   []TraceRankWindow `json:"ranks"`
	SourceEquivalentCostNS  int64             `json:"source_equivalent_cost_ns"`
	PriorObservationAgeNS   int64             `json:"prior_observation_age_ns"`
	PriorObservationPresent bool              `json:"prior_observation_present"`
}

// TraceSlot is a physical scheduler slot handle.
type TraceSlot struct {
	Slot       int `json:"slot"`
	Generation int `json:"generation"`
}

// TraceSelection is the retained cost observation a selection used.
type TraceSelection struct {
	ObservedAtNS  int64  `json:"observed_at_ns"`
	Freshness     string `json:"freshness"`      // fresh, stale or unobserved
	RefreshOrigin string `json:"refresh_origin"` // completion or estimate
}

// TraceRankWindow is one rank's GPU interval of a frame.
type TraceRankWindow struct {
	Rank    int   `json:"rank"`
	StartNS int64 `json:"start_ns"`
	EndNS   int64 `json:"end_ns"`
}

// TraceCapture is the document the endpoint answers with.
type TraceCapture struct {
	Format              string `json:"format"`
	Source              string `json:"source"`
	Model               string `json:"model"`
	RequestedDurationNS int64  `json:"requested_duration_ns"`
	Incarnation         struct {
		Before string `json:"before"`
		After  string `json:"after"`
	} `json:"incarnation"`
	Clock struct {
		Origin string      `json:"origin"`
		Before TraceAnchor `json:"before"`
		After  TraceAnchor `json:"after"`
	} `json:"clock"`
	Window struct {
		StartNS int64 `json:"start_mono_ns"`
		EndNS   int64 `json:"end_mono_ns"`
	} `json:"window"`
	Ranks          []int         `json:"ranks"`
	Capacity       int           `json:"capacity"`
	Overflow       bool          `json:"overflow"`
	DroppedSamples int           `json:"dropped_samples"`
	Graphs         []TraceGraph  `json:"graphs"`
	Samples        []TraceSample `json:"samples"`
}

// TraceFormat names the capture document's format.
const TraceFormat = "rigor.scheduler-trace.v1"

// readAnchor reads the monotonic clock, then the wall clock, as two reads.
func readAnchor() TraceAnchor {
	mono := monoNS(time.Now())
	return TraceAnchor{MonoNS: mono, UTC: time.Now().UTC().Format(time.RFC3339Nano)}
}

// captureDuration reads a capture endpoint's duration query (1 s when absent); a
// bad one is answered 400 here and ok is false.
func captureDuration(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	q := r.URL.Query().Get("duration")
	if q == "" {
		return time.Second, true
	}
	v, err := time.ParseDuration(q)
	if err != nil || v <= 0 || v > TraceMaxDuration {
		writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("duration %q: want a positive duration up to %s", q, TraceMaxDuration))
		return 0, false
	}
	return v, true
}

func (s *Server) serveSchedulerTrace(w http.ResponseWriter, r *http.Request) {
	d, ok := captureDuration(w, r)
	if !ok {
		return
	}
	faults := s.Faults()
	if faults.TraceDropRate < 0 || faults.TraceDropRate > 1 {
		writeError(w, http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("faults: trace_drop_rate = %g is not a probability", faults.TraceDropRate))
		return
	}
	c := &TraceCapture{Format: TraceFormat, Source: "rigor-sim/" + s.cfg.Profile.Name, Model: s.cfg.ModelName, RequestedDurationNS: int64(d)}
	c.Clock.Origin = "process"
	c.Incarnation.Before = s.cfg.Incarnation
	for i := range TraceRanks {
		c.Ranks = append(c.Ranks, i)
	}
	c.Capacity = TraceCapacity
	if faults.TraceOverflow {
		c.Capacity = TraceOverflowCapacity
	}
	c.Clock.Before = readAnchor()
	tr := newTracer(s, c, faults)
	start := time.Now()
	c.Window.StartNS = monoNS(start)
	deadline, ok := s.runTracer(w, r, tr, start, d)
	if !ok {
		return
	}
	c.Window.EndNS = monoNS(deadline)
	c.Clock.After = readAnchor()
	c.Incarnation.After = s.cfg.Incarnation
	c.Graphs = tr.graphTable()
	if c.Samples == nil {
		c.Samples = []TraceSample{}
	}
	writeJSON(w, http.StatusOK, c)
}

// runTracer advances tr tick by tick over [start, start+d) and returns the window's
// end; false when the server closed (w has its answer) or the client went away.
func (s *Server) runTracer(w http.ResponseWriter, r *http.Request, tr *tracer, start time.Time, d time.Duration) (time.Time, bool) {
	deadline := start.Add(d)
	tick := time.NewTicker(traceTick)
	defer tick.Stop()
	tr.next = monoNS(start)
	for now := start; now.Before(deadline); {
		select {
		case <-s.done:
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down; capture abandoned")
			return deadline, false
		case <-r.Context().Done():
			return deadline, false
		case now = <-tick.C:
			if now.After(deadline) {
				now = deadline
			}
			tr.advance(monoNS(now))
		}
	}
	tr.advance(monoNS(deadline))
	return deadline, true
}

// tracer turns the engine's state at each tick into the frames the model says ran
// since the last tick.
type tracer struct {
	s       *Server
	c       *TraceCapture
	mem     *traceMemory
	drop    float64
	scale   float64
	rng     *mrand.Rand
	next    int64 // completion observation of the last frame: the next selection
	seq     int
	running int
	gen     int
	used    map[int]TraceGraph
	// pending is the frame selected but not yet observed complete; prevEnd is each
	// rank's end of the last emitted frame.
	pending *TraceSample
	prevEnd []int64
	// observer: a tracer of another instrument (the simulated Nsight capture) that
	// sees the same frames but leaves the retained cost observations alone.
	observer bool
}

func newTracer(s *Server, c *TraceCapture, f Faults) *tracer {
	mem := s.traceMemory()
	mem.mu.Lock()
	mem.captures++
	n := mem.captures
	mem.mu.Unlock()
	return &tracer{
		s: s, c: c, mem: mem, drop: f.TraceDropRate, scale: s.cfg.TimeScale * f.slowdown(),
		rng:  mrand.New(mrand.NewPCG(s.cfg.Seed, n)),
		used: map[int]TraceGraph{},
	}
}

// model converts a model-time duration to capture nanoseconds.
func (t *tracer) model(d time.Duration) int64 { return int64(float64(d) * t.scale) }

func (t *tracer) advance(now int64) {
	for n := 0; n < 100000; n++ {
		if t.pending == nil {
			st := t.s.Stats()
			admitted := st.Running > t.running
			if st.Running != t.running {
				t.gen++ // lanes were reassigned: every slot handle gets a new generation
			}
			t.running = st.Running
			if st.Running == 0 {
				t.next, t.prevEnd = now, nil // idle: the scheduler runs no frame
				return
			}
			t.pending = t.frame(admitted && t.prevEnd != nil, st.Running)
		}
		if t.pending.CompletionObservedAtNS > now {
			return
		}
		t.emit(t.pending)
		t.next = t.pending.CompletionObservedAtNS
		t.pending = nil
	}
}

// graph returns the server's index of the graph for kind and lanes.
func (t *tracer) graph(kind string, lanes int) TraceGraph {
	capacity := 1 << bits.Len(uint(lanes-1)) // captured batch sizes are powers of two
	key := fmt.Sprintf("%s/%d", kind, capacity)
	t.mem.mu.Lock()
	defer t.mem.mu.Unlock()
	g, ok := t.mem.graphs[key]
	if !ok {
		g = TraceGraph{Index: len(t.mem.graphs), Kind: kind, Shape: fmt.Sprintf("%dx%d", capacity, TraceDraftTokens),
			BatchCapacity: capacity, TokenCapacity: capacity * (1 + TraceDraftTokens)}
		if kind == "mixed" {
			g.PrefillCapacity = tracePrefillChunk
			g.TokenCapacity += tracePrefillChunk
			g.Shape += fmt.Sprintf("+p%d", tracePrefillChunk)
		}
		t.mem.graphs[key] = g
	}
	return g
}

// graphTable lists the graphs the capture's samples use, by index.
func (t *tracer) graphTable() []TraceGraph {
	out := make([]TraceGraph, 0, len(t.used))
	for _, g := range t.used {
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Index < out[j].Index })
	return out
}

// frame builds the next frame: a mixed frame when a lane was just admitted.
func (t *tracer) frame(admitted bool, lanes int) *TraceSample {
	kind := "speculative"
	if admitted {
		kind = "mixed"
	}
	g := t.graph(kind, lanes)
	p := t.s.cfg.Profile
	tpot := p.TPOTBase + p.TPOTPerRunning*time.Duration(lanes-1)
	wall := max(t.model(time.Duration(float64(tpot)*traceTokensPerStep)), int64(traceMinGap))
	overhead := t.model(traceSelectToCommit + traceCommitToLaunch + traceObserveDelay + traceRankStagger*(TraceRanks-1))
	gpu := float64(wall-overhead) * (1 + traceFrameJitter*(2*t.rng.Float64()-1))
	queued := false
	if kind == "mixed" {
		gpu *= traceMixedStretch
		queued = true // selected while the previous frame is outstanding
	}
	selected := t.next + t.model(traceObserveToSelect)
	if queued {
		selected = t.next - int64(gpu*traceQueuedLead)
	}
	committed := selected + t.model(traceSelectToCommit)
	launch := committed + t.model(traceCommitToLaunch)
	ranks := make([]TraceRankWindow, TraceRanks)
	var maxRank, lastEnd int64
	for r := range ranks {
		start := launch + t.model(traceRankStagger)*int64(r)
		if t.prevEnd != nil && r < len(t.prevEnd) {
			start = max(start, t.prevEnd[r]+t.model(time.Microsecond))
		}
		dur := int64(math.Max(gpu+t.rng.NormFloat64()*float64(t.model(traceRankSigma)), gpu/2))
		ranks[r] = TraceRankWindow{Rank: r, StartNS: start, EndNS: start + dur}
		maxRank = max(maxRank, dur)
		lastEnd = max(lastEnd, start+dur)
	}
	observed := lastEnd + t.model(traceObserveDelay)
	s := &TraceSample{
		Graph: g.Index, ScheduledLanes: lanes, Queued: queued,
		SelectedAtNS: selected, CommittedAtNS: committed, CompletionObservedAtNS: observed,
		HostWallNS: observed - selected, Ranks: ranks,
	}
	// What the cost estimator measures of this frame: the device time alone when the
	// frame waited behind another, otherwise whichever of device and host is longer.
	s.SourceEquivalentCostNS = maxRank
	if !queued {
		s.SourceEquivalentCostNS = max(maxRank, s.HostWallNS)
	}
	// A selection can only use an observation already made: a queued frame is
	// selected before the frame ahead of it is observed complete.
	var prior retainedCost
	ok := false
	t.mem.mu.Lock()
	for _, o := range t.mem.retained[g.Index] {
		if o.observedNS <= selected {
			prior, ok = o, true
		}
	}
	t.mem.mu.Unlock()
	if ok {
		s.RetainedNS = prior.costNS
		s.PriorObservationPresent = true
		s.PriorObservationAgeNS = selected - prior.observedNS
		s.Selection = TraceSelection{ObservedAtNS: prior.observedNS, Freshness: TraceFresh, RefreshOrigin: TraceOriginCompletion}
		if s.PriorObservationAgeNS > t.model(traceFreshFor) {
			s.Selection.Freshness = TraceStale
		}
	} else {
		s.RetainedNS = int64(gpu)
		s.Selection = TraceSelection{ObservedAtNS: selected, Freshness: TraceUnobserved, RefreshOrigin: TraceOriginEstimate}
	}
	for i := range lanes {
		s.Requests = append(s.Requests, TraceSlot{Slot: i, Generation: t.gen})
	}
	t.used[g.Index] = g
	return s
}

// emit records a completed frame, refreshes its graph's retained cost, and keeps the
// sample unless the buffer is full or the drop fault takes it.
func (t *tracer) emit(s *TraceSample) {
	s.Seq = t.seq
	t.seq++
	if !t.observer {
		t.mem.mu.Lock()
		obs := append(t.mem.retained[s.Graph], retainedCost{costNS: s.SourceEquivalentCostNS, observedNS: s.CompletionObservedAtNS})
		t.mem.retained[s.Graph] = obs[max(0, len(obs)-2):]
		t.mem.mu.Unlock()
	}
	t.prevEnd = t.prevEnd[:0]
	for _, r := range s.Ranks {
		t.prevEnd = append(t.prevEnd, r.EndNS)
	}
	switch {
	case t.drop > 0 && t.rng.Float64() < t.drop:
		t.c.DroppedSamples++
	case len(t.c.Samples) >= t.c.Capacity:
		t.c.Overflow = true
		t.c.DroppedSamples++
	default:
		t.c.Samples = append(t.c.Samples, *s)
	}
}
