package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func nsysProfile(t *testing.T, url, duration string) *NsysProfile {
	t.Helper()
	resp, err := http.Post(url+"/debug/nsys-profile?duration="+duration, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("nsys-profile: %s: %s", resp.Status, raw)
	}
	var p NsysProfile
	if err := json.Unmarshal(raw, &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// The simulated Nsight capture holds the kernels of the frames the server ran under
// its load: every rank's GPU interval of every frame is covered by that frame's
// kernels on that rank's device, inside an NVTX range named after the graph, and the
// export says it is simulated.
func TestNsysProfileUnderLoad(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05, Seed: 7})
	stop := underLoad(t, rn.URL(), 3)
	defer stop()
	time.Sleep(50 * time.Millisecond)
	p := nsysProfile(t, rn.URL(), "300ms")
	f := p.Export
	if !p.Simulated || !strings.Contains(f.Version, "simulated") || len(f.Diagnostics) != 1 || f.Diagnostics[0].Severity != 2 || !strings.Contains(f.Diagnostics[0].Text, "simulated capture") {
		t.Fatalf("not labelled as simulated: simulated=%v version=%q diagnostics=%v", p.Simulated, f.Version, f.Diagnostics)
	}
	if p.Frames < 5 || p.RequestsCompleted < 1 {
		t.Fatalf("%d frames, %d requests completed in 300ms under load; want frames and finished requests", p.Frames, p.RequestsCompleted)
	}
	if f.Stop < int64(300*time.Millisecond) || f.Start != 0 {
		t.Errorf("analysis window %d..%d ns, want 0..>=300ms", f.Start, f.Stop)
	}
	if len(f.GPUs) != TraceRanks || len(f.Ranges) != p.Frames*TraceRanks {
		t.Fatalf("%d GPUs, %d ranges for %d frames; want %d GPUs and one range per frame and rank", len(f.GPUs), len(f.Ranges), p.Frames, TraceRanks)
	}
	perDevice := map[int]int64{}
	var prevEnd = map[int]int64{}
	for _, k := range f.Kernels {
		if k.End <= k.Start || k.Start < 0 || k.End > f.Stop {
			t.Fatalf("kernel %s [%d, %d] outside the window 0..%d", k.Name, k.Start, k.End, f.Stop)
		}
		if k.Start < prevEnd[k.Device] {
			t.Fatalf("kernels overlap on device %d's one stream: %s starts %d before the previous end %d", k.Device, k.Name, k.Start, prevEnd[k.Device])
		}
		if k.LaunchAt == 0 || k.LaunchAt > k.Start || k.GraphID == nil {
			t.Fatalf("kernel %s launched at %d (start %d), graph %v: want a launch before it and a graph", k.Name, k.LaunchAt, k.Start, k.GraphID)
		}
		prevEnd[k.Device] = k.End
		perDevice[k.Device] += k.End - k.Start
	}
	// Kernels fill each rank's GPU intervals exactly: the per-device sum is the sum of
	// that rank's intervals, which is most of the frames' host wall time.
	var wall int64
	for _, r := range f.Ranges {
		wall += r.End - r.Start
	}
	for d := range TraceRanks {
		if share := float64(perDevice[d]) / float64(wall/TraceRanks); share < 0.9 || share > 1 {
			t.Errorf("device %d: kernel time %.3f of the frames' host wall time; want the GPU intervals (0.9-1)", d, share)
		}
	}
	// An idle server ran no frame: no kernel.
	idle := startServer(t, Config{TimeScale: 0.05, Seed: 7})
	if q := nsysProfile(t, idle.URL(), "50ms"); len(q.Export.Kernels) != 0 || q.Frames != 0 {
		t.Errorf("idle server: %d kernels, %d frames; want none", len(q.Export.Kernels), q.Frames)
	}
}

// While a simulated Nsight capture runs, arriving requests carry the observer's
// overhead; before and after it they do not.
func TestNsysObserverOverhead(t *testing.T) {
	// The README says a profiled request is 4 % slower.
	if NsysObserverOverhead != 1.04 {
		t.Fatalf("NsysObserverOverhead %v: the README says 4 %%", NsysObserverOverhead)
	}
	rn := startServer(t, Config{TimeScale: 0.05, Seed: 7})
	s := rn.Server()
	if got := s.observerOverhead(); got != 1 {
		t.Fatalf("overhead before a capture %v, want 1", got)
	}
	done := make(chan struct{})
	go func() { defer close(done); nsysProfile(t, rn.URL(), "200ms") }()
	deadline := time.Now().Add(150 * time.Millisecond)
	seen := false
	for time.Now().Before(deadline) && !seen {
		seen = s.observerOverhead() == NsysObserverOverhead
		time.Sleep(time.Millisecond)
	}
	<-done
	if !seen {
		t.Error("no overhead while the capture ran")
	}
	if got := s.observerOverhead(); got != 1 {
		t.Errorf("overhead after the capture %v, want 1", got)
	}
}

// Both capture endpoints refuse a duration that is not positive or exceeds the
// bound, with one message, before capturing anything.
func TestCaptureEndpointsRefuseBadDurations(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05, Seed: 7})
	for _, path := range []string{"/debug/scheduler-trace", "/debug/nsys-profile"} {
		for _, d := range []string{"0s", "-1s", "2m", "soon"} {
			resp, err := http.Post(rn.URL()+path+"?duration="+d, "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), fmt.Sprintf(`duration \"%s\": want a positive duration up to 1m0s`, d)) {
				t.Errorf("%s?duration=%s: %d %s", path, d, resp.StatusCode, b)
			}
		}
	}
}
