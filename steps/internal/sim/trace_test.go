package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/schemas"
)

// underLoad keeps n streams running against url until the returned stop is called.
func underLoad(t *testing.T, url string, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				_, _ = doStream(ctx, url, "/v1/chat/completions", fmt.Sprintf("trace-%d-%d", i, k), streamChat(promptOf(fmt.Sprintf("t%d", i), 200), 400))
			}
		}()
	}
	return func() { cancel(); wg.Wait() }
}

func capture(t *testing.T, url, duration string) (*TraceCapture, []byte) {
	t.Helper()
	resp, err := http.Post(url+"/debug/scheduler-trace?duration="+duration, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("capture: %s: %s", resp.Status, raw)
	}
	var c TraceCapture
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	return &c, raw
}

func TestSchedulerTraceUnderLoad(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05, Seed: 7})
	stop := underLoad(t, rn.URL(), 3)
	defer stop()
	time.Sleep(50 * time.Millisecond) // let the batch fill
	c, raw := capture(t, rn.URL(), "200ms")
	if err := schemas.Validate("trace-capture", raw); err != nil {
		t.Fatalf("capture does not match its schema: %v", err)
	}
	if len(c.Samples) < 10 || c.DroppedSamples != 0 || c.Overflow {
		t.Fatalf("%d samples, %d dropped, overflow %v: want a complete capture with samples", len(c.Samples), c.DroppedSamples, c.Overflow)
	}
	if c.Incarnation.Before == "" || c.Incarnation.Before != c.Incarnation.After {
		t.Errorf("incarnation %+v", c.Incarnation)
	}
	if !(c.Clock.Before.MonoNS <= c.Window.StartNS && c.Window.EndNS <= c.Clock.After.MonoNS) {
		t.Errorf("anchors %+v do not bound the window %+v", c.Clock, c.Window)
	}
	if got := c.Window.EndNS - c.Window.StartNS; got != int64(200*time.Millisecond) {
		t.Errorf("window %d ns, want the requested 200ms", got)
	}
	// The frame model: a speculative frame lasts TPOT at the running batch times the
	// tokens a lane keeps per step, scaled; a mixed frame admits a lane and is queued.
	p := builtinProfiles["incumbent"]
	var lanesSeen bool
	spaced := 0
	for i, s := range c.Samples {
		if s.Seq != c.Samples[0].Seq+i {
			t.Fatalf("sequence gap at %d: %d", i, s.Seq)
		}
		g := graphOf(t, c, s.Graph)
		if g.BatchCapacity < s.ScheduledLanes {
			t.Fatalf("sample %d: graph %d does not hold %d lanes", s.Seq, s.Graph, s.ScheduledLanes)
		}
		if len(s.Ranks) != TraceRanks || !(s.SelectedAtNS <= s.CommittedAtNS && s.CommittedAtNS <= s.Ranks[0].StartNS && s.Ranks[0].EndNS <= s.CompletionObservedAtNS) {
			t.Fatalf("sample %d: times out of order: %+v", s.Seq, s)
		}
		if s.Queued != (g.Kind == "mixed") {
			t.Errorf("sample %d: queued %v on a %s graph: only frames that admit a lane are queued", s.Seq, s.Queued, g.Kind)
		}
		if s.ScheduledLanes == 3 && g.Kind == "speculative" {
			lanesSeen = true
			if g.Shape != "4x3" || g.TokenCapacity != 16 {
				t.Errorf("3 lanes run on graph %+v; want the 4x3 capacity (capacities are not lane counts)", g)
			}
			wall := time.Duration(float64(p.TPOTBase+2*p.TPOTPerRunning) * traceTokensPerStep * 0.05)
			// Only a frame chained to its predecessor is spaced by the model: after the
			// batch went idle (every stream between requests) the next frame starts
			// whenever a request arrives, which is the client's timing, not the model's.
			prev := c.Samples[max(i-1, 0)]
			chained := i > 0 && s.SelectedAtNS == prev.CompletionObservedAtNS+int64(float64(traceObserveToSelect)*0.05)
			if chained && prev.ScheduledLanes == 3 && !prev.Queued {
				spaced++
				step := time.Duration(s.CompletionObservedAtNS - prev.CompletionObservedAtNS)
				if step < wall*9/10 || step > wall*11/10 {
					t.Errorf("frame spacing %s at 3 lanes, model says %s", step, wall)
				}
			}
		}
	}
	if !lanesSeen {
		t.Error("no sample with the 3 running requests")
	}
	if spaced < 5 {
		t.Errorf("only %d chained 3-lane frames to check the spacing of; want at least 5", spaced)
	}
}

func graphOf(t *testing.T, c *TraceCapture, index int) TraceGraph {
	t.Helper()
	for _, g := range c.Graphs {
		if g.Index == index {
			return g
		}
	}
	t.Fatalf("graph %d is not in the capture's table %+v", index, c.Graphs)
	return TraceGraph{}
}

// TestSchedulerTraceSeedFigures runs the flare profile at time scale 1 with four
// long generations, as seed 002's C4 pilot did (four requests each generating
// 1,024 tokens), and checks the capture against that pilot: about 44 samples in
// 1 s, all unqueued speculative 4x3 frames on both ranks with no drop, median
// max-rank GPU interval 22.683 ms, host wall 22.729 ms, rank spread 4.736 µs.
func TestSchedulerTraceSeedFigures(t *testing.T) {
	if testing.Short() {
		t.Skip("a 1 s capture at time scale 1")
	}
	p := builtinProfiles["flare"]
	p.OutputMedianTokens, p.OutputSigma = 100000, 0 // every request runs to max_tokens
	rn := startServer(t, Config{Profile: p, TimeScale: 1, Seed: 42})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = doStream(ctx, rn.URL(), "/v1/chat/completions", fmt.Sprintf("seed-c4-%d", i), streamChat(promptOf(fmt.Sprintf("s%d", i), 50), 1024))
		}()
	}
	defer func() { cancel(); wg.Wait() }()
	deadline := time.Now().Add(5 * time.Second)
	for rn.Server().Stats().Running < 4 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	c, raw := capture(t, rn.URL(), "1s")
	if err := schemas.Validate("trace-capture", raw); err != nil {
		t.Fatal(err)
	}
	if n := len(c.Samples); n < 42 || n > 46 || c.DroppedSamples != 0 || c.Overflow {
		t.Fatalf("%d samples (%d dropped, overflow %v); seed 002 kept 44 with zero drops", n, c.DroppedSamples, c.Overflow)
	}
	var maxRank, wall, spread []time.Duration
	for _, s := range c.Samples {
		g := graphOf(t, c, s.Graph)
		if s.Queued || g.Kind != "speculative" || g.Shape != "4x3" || s.ScheduledLanes != 4 || len(s.Ranks) != 2 {
			t.Fatalf("sample %d: queued %v on %s %s with %d lanes and %d ranks; want unqueued speculative 4x3, 4 lanes, both ranks", s.Seq, s.Queued, g.Kind, g.Shape, s.ScheduledLanes, len(s.Ranks))
		}
		d0, d1 := s.Ranks[0].EndNS-s.Ranks[0].StartNS, s.Ranks[1].EndNS-s.Ranks[1].StartNS
		maxRank = append(maxRank, time.Duration(max(d0, d1)))
		spread = append(spread, time.Duration(max(d0, d1)-min(d0, d1)))
		wall = append(wall, time.Duration(s.HostWallNS))
	}
	for _, x := range []struct {
		name      string
		got, want time.Duration
		tol       float64
	}{
		{"median max-rank GPU interval", median(maxRank), 22683 * time.Microsecond, 0.01},
		{"median host wall interval", median(wall), 22729 * time.Microsecond, 0.01},
		{"median rank spread", median(spread), 4736 * time.Nanosecond, 0.5},
	} {
		t.Logf("%s %s (seed 002: %s)", x.name, x.got, x.want)
		if !within(x.got, x.want, x.tol) {
			t.Errorf("%s %s, seed 002 says %s (±%.0f%%)", x.name, x.got, x.want, x.tol*100)
		}
	}
}

// TestSchedulerTraceRetainedCosts checks the selection fields against the frames
// themselves, over two captures of one server: a graph keeps its index, a selection
// uses the cost its graph's last completed frame measured (max-rank GPU time when
// that frame was queued, else max(max-rank, host wall)), the age is selection minus
// that observation, and a graph no frame has completed yet is an estimate.
func TestSchedulerTraceRetainedCosts(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05, Seed: 3})
	stop := underLoad(t, rn.URL(), 3)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	first, _ := capture(t, rn.URL(), "150ms")
	second, _ := capture(t, rn.URL(), "150ms")
	if first.Incarnation.Before != rn.Server().Config().Incarnation || first.Incarnation.After != first.Incarnation.Before {
		t.Errorf("capture incarnation %+v, server %s: the capture names the runtime's incarnation", first.Incarnation, rn.Server().Config().Incarnation)
	}
	shapes := map[int]string{}
	done := map[int][]TraceSample{} // graph -> its completed frames, across both captures
	estimates, completions, stale := 0, 0, 0
	for ci, c := range []*TraceCapture{first, second} {
		for _, s := range c.Samples {
			g := graphOf(t, c, s.Graph)
			if prev, ok := shapes[g.Index]; ok && prev != g.Kind+g.Shape {
				t.Fatalf("graph %d is %s in one capture and %s in another", g.Index, prev, g.Kind+g.Shape)
			}
			shapes[g.Index] = g.Kind + g.Shape
			d0, d1 := s.Ranks[0].EndNS-s.Ranks[0].StartNS, s.Ranks[1].EndNS-s.Ranks[1].StartNS
			want := max(d0, d1)
			if !s.Queued {
				want = max(want, s.HostWallNS)
			}
			if s.SourceEquivalentCostNS != want || s.HostWallNS != s.CompletionObservedAtNS-s.SelectedAtNS {
				t.Fatalf("capture %d sample %d: source-equivalent cost %d, host wall %d; want %d and %d", ci, s.Seq, s.SourceEquivalentCostNS, s.HostWallNS, want, s.CompletionObservedAtNS-s.SelectedAtNS)
			}
			// The latest frame of this graph observed complete before the selection.
			var prev *TraceSample
			for i := range done[s.Graph] {
				if f := &done[s.Graph][i]; f.CompletionObservedAtNS <= s.SelectedAtNS {
					prev = f
				}
			}
			switch {
			case s.Selection.RefreshOrigin == TraceOriginEstimate:
				estimates++
				if s.PriorObservationPresent || s.Selection.Freshness != TraceUnobserved {
					t.Errorf("an estimate with a prior observation: %+v", s)
				}
				if prev != nil {
					t.Errorf("sample %d: graph %d completed a frame before, yet the selection used an estimate", s.Seq, s.Graph)
				}
			case prev != nil:
				completions++
				if !s.PriorObservationPresent || s.RetainedNS != prev.SourceEquivalentCostNS || s.Selection.ObservedAtNS != prev.CompletionObservedAtNS ||
					s.PriorObservationAgeNS != s.SelectedAtNS-prev.CompletionObservedAtNS || s.PriorObservationAgeNS <= 0 {
					t.Errorf("sample %d: retained %d observed at %d (age %d); the graph's last frame before it measured %d, observed at %d",
						s.Seq, s.RetainedNS, s.Selection.ObservedAtNS, s.PriorObservationAgeNS, prev.SourceEquivalentCostNS, prev.CompletionObservedAtNS)
				}
				fresh := s.PriorObservationAgeNS <= int64(float64(traceFreshFor)*0.05)
				if (s.Selection.Freshness == TraceFresh) != fresh {
					t.Errorf("sample %d: age %d is %s", s.Seq, s.PriorObservationAgeNS, s.Selection.Freshness)
				}
				if !fresh {
					stale++
				}
			default:
				t.Errorf("sample %d: origin %s with no earlier frame of graph %d", s.Seq, s.Selection.RefreshOrigin, s.Graph)
			}
			done[s.Graph] = append(done[s.Graph], s)
		}
	}
	if estimates == 0 || completions == 0 {
		t.Errorf("%d estimates and %d completion-refreshed selections; want both", estimates, completions)
	}
	t.Logf("%d estimates, %d refreshed by a completion (%d stale)", estimates, completions, stale)
}

func TestSchedulerTraceDropAndOverflow(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05, Faults: Faults{TraceDropRate: 0.3}})
	stop := underLoad(t, rn.URL(), 2)
	defer stop()
	time.Sleep(30 * time.Millisecond)
	c, _ := capture(t, rn.URL(), "150ms")
	if c.DroppedSamples == 0 {
		t.Fatal("drop rate 0.3 dropped nothing")
	}
	gaps := 0
	for i := 1; i < len(c.Samples); i++ {
		gaps += c.Samples[i].Seq - c.Samples[i-1].Seq - 1
	}
	if gaps == 0 || gaps > c.DroppedSamples {
		t.Errorf("%d sequence gaps for %d dropped samples", gaps, c.DroppedSamples)
	}

	if err := rn.Server().SetFaults(Faults{TraceOverflow: true}); err != nil {
		t.Fatal(err)
	}
	c, _ = capture(t, rn.URL(), "300ms")
	if !c.Overflow || len(c.Samples) != TraceOverflowCapacity || c.DroppedSamples == 0 {
		t.Fatalf("overflow %v, %d samples (capacity %d), %d dropped", c.Overflow, len(c.Samples), c.Capacity, c.DroppedSamples)
	}
}

func TestSchedulerTraceIdleAndBadDuration(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05})
	c, raw := capture(t, rn.URL(), "20ms")
	if len(c.Samples) != 0 {
		t.Errorf("an idle server ran %d iterations", len(c.Samples))
	}
	if err := schemas.Validate("trace-capture", raw); err != nil {
		t.Errorf("idle capture: %v", err)
	}
	resp, err := http.Post(rn.URL()+"/debug/scheduler-trace?duration=2h", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("duration 2h: %s, want 400", resp.Status)
	}
}
