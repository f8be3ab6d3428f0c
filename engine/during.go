package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/plans"
)

// blockWindow is what the engine saw of a block that a capture runs during: when it
// started, when it sent its first request, how many requests completed, and when it
// ended, all on the engine's clock.
type blockWindow struct {
	start, firstSend, end time.Time
	done                  int
}

// windows tracks the blocks that captures run during. Blocks report progress from
// their own goroutines, hence the lock.
type windows struct {
	mu     sync.Mutex
	byAddr map[string]*blockWindow
	hosts  map[string]bool // blocks a capture of this plan runs during
	timers map[string]bool // captures with a start_after timer set
	wake   chan struct{}   // tells the scheduler something a capture waits for happened
}

func newWindows(plan *plans.Plan) *windows {
	w := &windows{byAddr: map[string]*blockWindow{}, hosts: map[string]bool{}, timers: map[string]bool{}, wake: make(chan struct{}, 1)}
	for _, inst := range plan.Instances {
		if inst.Meta.During != "" {
			w.hosts[inst.Meta.During] = true
		}
	}
	return w
}

func (w *windows) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// started, progress and ended record a host block's life.
func (w *windows) started(addr string, t time.Time) {
	if !w.hosts[addr] {
		return
	}
	w.mu.Lock()
	w.byAddr[addr] = &blockWindow{start: t}
	w.mu.Unlock()
}

func (w *windows) progress(addr string, p Progress, t time.Time) {
	if !w.hosts[addr] {
		return
	}
	w.mu.Lock()
	if b := w.byAddr[addr]; b != nil {
		if (p.Sending || p.Done > 0) && b.firstSend.IsZero() {
			b.firstSend = t
		}
		b.done = p.Done
	}
	w.mu.Unlock()
	w.poke()
}

func (w *windows) ended(addr string, t time.Time) {
	if !w.hosts[addr] {
		return
	}
	w.mu.Lock()
	if b := w.byAddr[addr]; b != nil {
		b.end = t
	}
	w.mu.Unlock()
	w.poke()
}

func (w *windows) get(addr string) (blockWindow, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	b, ok := w.byAddr[addr]
	if !ok {
		return blockWindow{}, false
	}
	return *b, true
}

// duringMayStart decides for a capture whose dependencies are met: it starts once
// its block is sending and its start condition holds; it waits while the block has
// not started or the condition does not hold yet; and it is refused when the block
// ended first or never ran, since a capture that cannot overlap its block is not
// evidence "under load".
func (r *run) duringMayStart(inst *plans.Instance) bool {
	host := inst.Meta.During
	w, seen := r.windows.get(host)
	rec, hostSettled := r.terminal[host]
	switch {
	case !seen && hostSettled:
		r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusBlocked, Class: rec.Class, BlockedBy: host,
			Message: fmt.Sprintf("not started: the block it runs during, %s, is %s and sent nothing in this apply", host, rec.Status)})
		return false
	case !seen:
		return false
	case !w.end.IsZero():
		r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusFailed, Class: ClassInstrumentation,
			Policy:  policyFor(ClassInstrumentation, inst.Meta.OnFailureFor(string(ClassInstrumentation)), false),
			Message: fmt.Sprintf("refused: %s ended (%d requests completed) before the capture's start condition (%s) held, so it could not run under its load", host, w.done, inst.Meta.StartCondition())})
		r.stopIfPolicy(inst, ClassInstrumentation, r.terminal[inst.Addr].Policy, "capture could not start during "+host)
		return false
	case w.firstSend.IsZero():
		return false
	}
	if n := inst.Meta.StartAfterRequests; n > 0 && w.done < n {
		return false
	}
	if d := inst.Meta.StartAfter; d > 0 {
		left := w.firstSend.Add(d).Sub(r.opts.Clock.Now())
		if left > 0 {
			r.windows.mu.Lock()
			armed := r.windows.timers[inst.Addr]
			r.windows.timers[inst.Addr] = true
			r.windows.mu.Unlock()
			if !armed {
				time.AfterFunc(left, r.windows.poke)
			}
			return false
		}
	}
	return true
}

// overlap is overlap.json, the evidence that a capture ran under its block's load:
// both windows on the engine's clock (RFC 3339, nanoseconds). A block still running
// when the capture ended has no end yet.
type overlap struct {
	Block         string     `json:"block"`
	Declared      string     `json:"declared"`
	BlockWindow   timeWindow `json:"block_window"`
	CaptureWindow timeWindow `json:"capture_window"`
	Requests      int        `json:"block_requests_completed_at_capture_end"`
	Overlapped    bool       `json:"overlapped"`
	Detail        string     `json:"detail"`
}

type timeWindow struct {
	Start *time.Time `json:"start"`
	End   *time.Time `json:"end"`
}

func ptr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// recordOverlap writes overlap.json into a capture's attempt directory and says
// whether the capture overlapped its block as declared: it started no earlier than
// the block's first request, and the block was still running when it ended.
func (r *run) recordOverlap(inst *plans.Instance, dir string, start, end time.Time) (bool, string) {
	w, _ := r.windows.get(inst.Meta.During)
	ok := !w.firstSend.IsZero() && !start.Before(w.firstSend) && (w.end.IsZero() || !w.end.Before(end))
	detail := fmt.Sprintf("the capture ran %s–%s within %s's load (first request %s)", start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano), inst.Meta.During, w.firstSend.UTC().Format(time.RFC3339Nano))
	switch {
	case w.firstSend.IsZero():
		detail = inst.Meta.During + " sent no request while the capture ran"
	case start.Before(w.firstSend):
		detail = fmt.Sprintf("the capture started %s before %s's first request", w.firstSend.Sub(start), inst.Meta.During)
	case !w.end.IsZero() && w.end.Before(end):
		detail = fmt.Sprintf("%s ended %s before the capture did: its last %s ran without the block's load", inst.Meta.During, end.Sub(w.end), end.Sub(w.end))
	}
	o := overlap{Block: inst.Meta.During, Declared: inst.Meta.StartCondition(), Requests: w.done, Overlapped: ok, Detail: detail,
		BlockWindow:   timeWindow{Start: ptr(w.firstSend), End: ptr(w.end)},
		CaptureWindow: timeWindow{Start: ptr(start), End: ptr(end)}}
	if b, err := json.MarshalIndent(o, "", "  "); err == nil {
		_ = os.WriteFile(filepath.Join(dir, "overlap.json"), append(b, '\n'), 0o644)
	}
	return ok, detail
}
