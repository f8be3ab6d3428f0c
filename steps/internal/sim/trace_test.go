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
	// The timing model: an iteration lasts TPOTBase + TPOTPerRunning*(lanes-1), scaled.
	p := builtinProfiles["incumbent"]
	var lanesSeen bool
	for i, s := range c.Samples {
		if s.Seq != c.Samples[0].Seq+i {
			t.Fatalf("sequence gap at %d: %d", i, s.Seq)
		}
		if s.Graph >= len(c.Graphs) || c.Graphs[s.Graph].BatchCapacity < s.ScheduledLanes {
			t.Fatalf("sample %d: graph %d does not hold %d lanes", s.Seq, s.Graph, s.ScheduledLanes)
		}
		if len(s.Ranks) != TraceRanks || !(s.SelectedAtNS <= s.CommittedAtNS && s.CommittedAtNS <= s.Ranks[0].StartNS && s.Ranks[0].EndNS <= s.CompletionObservedAtNS) {
			t.Fatalf("sample %d: times out of order: %+v", s.Seq, s)
		}
		if s.ScheduledLanes == 3 {
			lanesSeen = true
			gap := time.Duration(float64(p.TPOTBase+2*p.TPOTPerRunning) * 0.05)
			if i > 0 && c.Samples[i-1].ScheduledLanes == 3 {
				step := time.Duration(s.Ranks[0].StartNS - c.Samples[i-1].Ranks[0].StartNS)
				if step < gap*9/10 || step > gap*11/10 {
					t.Errorf("iteration spacing %s at 3 lanes, model says %s", step, gap)
				}
			}
		}
	}
	if !lanesSeen {
		t.Error("no sample with the 3 running requests")
	}
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
