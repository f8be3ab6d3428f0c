package sim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/bits"
	mrand "math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// The scheduler-trace capture endpoint, POST /debug/scheduler-trace?duration=1s: for a
// bounded window the server records one sample per scheduler iteration, derived from
// its own timing model (the running batch and the TPOT model give the iteration
// length), and answers with one JSON document (schemas/trace-capture.schema.json).
//
// What a sample holds follows seed 000: the runtime graph (index into the capture's
// graph table, kind, capacities), the scheduled physical lane count, the queued flag
// (another executor frame was outstanding at submission), physical slot/generation
// handles (not HTTP request IDs), selection, commit and completion-observation times,
// one GPU interval per tensor-parallel rank, and the retained shape-cost observation
// used at selection with its age, freshness and refresh origin. Times are nanoseconds
// from a process-local monotonic origin; before/after anchors pair that clock with UTC.
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
	traceTick             = time.Millisecond
	traceMinGap           = 10 * time.Microsecond // floor on an iteration at tiny time scales
	traceSpecTokens       = 4                     // tokens per lane per step (MTP3: one + three drafts)
	tracePrefillChunk     = 2048
)

// traceOrigin is the process-local origin of every *_ns time in a capture.
var traceOrigin = time.Now()

func monoNS(t time.Time) int64 { return int64(t.Sub(traceOrigin)) }

var traceInstances sync.Map // *Server -> string

// instanceID names this server's lifetime: a restarted container is a new Server with
// a new ID, so a capture's before/after incarnations can be compared.
func (s *Server) instanceID() string {
	if v, ok := traceInstances.Load(s); ok {
		return v.(string)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	v, _ := traceInstances.LoadOrStore(s, fmt.Sprintf("sim-%s@%d", hex.EncodeToString(b[:]), time.Now().UnixNano()))
	return v.(string)
}

// TraceAnchor pairs the capture's monotonic clock with UTC at one moment.
type TraceAnchor struct {
	MonoNS int64  `json:"mono_ns"`
	UTC    string `json:"utc"`
}

// TraceGraph is one runtime graph; token/prefill capacities are capacities, not the
// tokens an iteration actually carried.
type TraceGraph struct {
	Index           int    `json:"index"`
	Kind            string `json:"kind"` // decode or mixed
	Shape           string `json:"shape"`
	BatchCapacity   int    `json:"batch_capacity"`
	TokenCapacity   int    `json:"token_capacity"`
	PrefillCapacity int    `json:"prefill_capacity"`
}

// TraceSample is one scheduler iteration.
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
	Freshness     string `json:"freshness"`      // fresh or stale
	RefreshOrigin string `json:"refresh_origin"` // measured or prior
}

// TraceRankWindow is one rank's GPU interval of an iteration.
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

func anchorAt(t time.Time) TraceAnchor {
	return TraceAnchor{MonoNS: monoNS(t), UTC: t.UTC().Format(time.RFC3339Nano)}
}

func (s *Server) serveSchedulerTrace(w http.ResponseWriter, r *http.Request) {
	d := time.Second
	if q := r.URL.Query().Get("duration"); q != "" {
		v, err := time.ParseDuration(q)
		if err != nil || v <= 0 || v > TraceMaxDuration {
			writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("duration %q: want a positive duration up to %s", q, TraceMaxDuration))
			return
		}
		d = v
	}
	faults := s.Faults()
	if faults.TraceDropRate < 0 || faults.TraceDropRate > 1 {
		writeError(w, http.StatusInternalServerError, "InternalServerError", fmt.Sprintf("faults: trace_drop_rate = %g is not a probability", faults.TraceDropRate))
		return
	}
	c := &TraceCapture{Format: TraceFormat, Source: "rigor-sim/" + s.cfg.Profile.Name, Model: s.cfg.ModelName, RequestedDurationNS: int64(d)}
	c.Clock.Origin = "process"
	c.Incarnation.Before = s.instanceID()
	for i := range TraceRanks {
		c.Ranks = append(c.Ranks, i)
	}
	c.Capacity = TraceCapacity
	if faults.TraceOverflow {
		c.Capacity = TraceOverflowCapacity
	}
	c.Clock.Before = anchorAt(time.Now())
	tr := newTracer(s, c, faults)
	start := time.Now()
	c.Window.StartNS = monoNS(start)
	deadline := start.Add(d)
	tick := time.NewTicker(traceTick)
	defer tick.Stop()
	tr.next = start
	for now := start; now.Before(deadline); {
		select {
		case <-s.done:
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down; capture abandoned")
			return
		case <-r.Context().Done():
			return
		case now = <-tick.C:
			if now.After(deadline) {
				now = deadline
			}
			tr.advance(now)
		}
	}
	end := time.Now()
	tr.advance(deadline)
	c.Window.EndNS = monoNS(deadline)
	c.Clock.After = anchorAt(end)
	c.Incarnation.After = s.instanceID()
	if c.Graphs == nil {
		c.Graphs = []TraceGraph{}
	}
	if c.Samples == nil {
		c.Samples = []TraceSample{}
	}
	writeJSON(w, http.StatusOK, c)
}

// tracer turns the engine's state at each tick into the iterations the timing model
// says ran since the last tick.
type tracer struct {
	s        *Server
	c        *TraceCapture
	drop     float64
	rng      *mrand.Rand
	next     time.Time // end of the last emitted iteration
	seq      int
	running  int
	gen      int
	graphs   map[string]int
	retained map[int][2]int64 // graph -> {cost ns, observed at ns}
	prevObs  int64            // completion observation of the previous iteration
}

func newTracer(s *Server, c *TraceCapture, f Faults) *tracer {
	return &tracer{
		s: s, c: c, drop: f.TraceDropRate,
		rng:    mrand.New(mrand.NewPCG(s.cfg.Seed, uint64(time.Now().UnixNano()))),
		graphs: map[string]int{}, retained: map[int][2]int64{},
	}
}

func (t *tracer) advance(now time.Time) {
	st := t.s.Stats()
	admitted := st.Running > t.running
	if st.Running != t.running {
		t.gen++ // lanes were reassigned: every slot handle gets a new generation
	}
	t.running = st.Running
	if st.Running == 0 {
		t.next = now // idle: the scheduler runs no iteration
		return
	}
	p := t.s.cfg.Profile
	model := p.TPOTBase + p.TPOTPerRunning*time.Duration(st.Running-1)
	gap := time.Duration(float64(model) * t.s.cfg.TimeScale * t.s.Faults().slowdown())
	if gap < traceMinGap {
		gap = traceMinGap
	}
	for n := 0; !t.next.Add(gap).After(now) && n < 10000; n++ {
		kind := "decode"
		if admitted && n == 0 {
			kind = "mixed" // a new lane's prefill chunk shares this step
		}
		t.emit(t.next, gap, kind, st.Running)
		t.next = t.next.Add(gap)
	}
}

func (t *tracer) graph(kind string, lanes int) int {
	capacity := 1 << bits.Len(uint(lanes-1)) // captured batch sizes are powers of two
	key := fmt.Sprintf("%s/%d", kind, capacity)
	if i, ok := t.graphs[key]; ok {
		return i
	}
	g := TraceGraph{Index: len(t.c.Graphs), Kind: kind, Shape: fmt.Sprintf("b%d", capacity), BatchCapacity: capacity, TokenCapacity: capacity * traceSpecTokens}
	if kind == "mixed" {
		g.PrefillCapacity = tracePrefillChunk
		g.Shape += fmt.Sprintf("+p%d", tracePrefillChunk)
	}
	t.c.Graphs = append(t.c.Graphs, g)
	t.graphs[key] = g.Index
	return g.Index
}

func (t *tracer) emit(start time.Time, gap time.Duration, kind string, lanes int) {
	seq := t.seq
	t.seq++
	g := t.graph(kind, lanes)
	at := monoNS(start)
	gp := int64(gap)
	// With more than one lane the executor selects the next frame before the previous
	// one's completion is observed (asynchronous scheduling): that frame is queued.
	selected := at - gp/20
	if lanes > 1 {
		selected = at - gp/3
	}
	committed := selected + gp/30
	launch := committed + gp/50
	var maxRank int64
	ranks := make([]TraceRankWindow, TraceRanks)
	for r := range ranks {
		skew := int64(r) * gp / 200
		dur := int64(float64(gp) * 0.85 * (1 + 0.03*(2*t.rng.Float64()-1)))
		ranks[r] = TraceRankWindow{Rank: r, StartNS: launch + skew, EndNS: launch + skew + dur}
		maxRank = max(maxRank, ranks[r].EndNS-ranks[r].StartNS)
	}
	observed := ranks[0].EndNS
	for _, rw := range ranks {
		observed = max(observed, rw.EndNS)
	}
	observed += gp / 50
	sample := TraceSample{
		Seq: seq, Graph: g, ScheduledLanes: lanes, Queued: t.prevObs > selected,
		SelectedAtNS: selected, CommittedAtNS: committed, CompletionObservedAtNS: observed,
		HostWallNS: observed - selected, Ranks: ranks, SourceEquivalentCostNS: maxRank,
	}
	if host := observed - selected; !sample.Queued && host > sample.SourceEquivalentCostNS {
		sample.SourceEquivalentCostNS = host // the cost estimator's max(max-rank, host wall)
	}
	if prior, ok := t.retained[g]; ok {
		sample.RetainedNS = prior[0]
		sample.PriorObservationPresent = true
		sample.PriorObservationAgeNS = selected - prior[1]
		sample.Selection = TraceSelection{ObservedAtNS: prior[1], Freshness: "fresh", RefreshOrigin: "measured"}
		if sample.PriorObservationAgeNS > 50*gp {
			sample.Selection.Freshness = "stale"
		}
	} else {
		sample.RetainedNS = int64(float64(gp) * 0.85)
		sample.Selection = TraceSelection{ObservedAtNS: selected, Freshness: "stale", RefreshOrigin: "prior"}
	}
	for i := range lanes {
		sample.Requests = append(sample.Requests, TraceSlot{Slot: i, Generation: t.gen})
	}
	t.retained[g] = [2]int64{sample.SourceEquivalentCostNS, observed}
	t.prevObs = observed
	switch {
	case t.drop > 0 && t.rng.Float64() < t.drop:
		t.c.DroppedSamples++
	case len(t.c.Samples) >= t.c.Capacity:
		t.c.Overflow = true
		t.c.DroppedSamples++
	default:
		t.c.Samples = append(t.c.Samples, sample)
	}
}
