package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rs/zerolog"
	"github.com/vbauerster/mpb/v8"
)

// syncBuf is a goroutine-safe buffer: mpb renders from its own goroutine.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// fakeTerm is a 120-column terminal that records what mpb draws.
type fakeTerm struct{ *syncBuf }

func (f fakeTerm) ReadFrom(r io.Reader) (int64, error) {
	b, err := io.ReadAll(r)
	n, _ := f.Write(b)
	return int64(n), err
}
func (fakeTerm) IsTerminal() bool               { return true }
func (fakeTerm) GetTermSize() (int, int, error) { return 160, 40, nil }
func (fakeTerm) Flush(int) error                { return nil }

// TestBarViewShowsBlockFigures renders a bar as a terminal would and checks that it
// shows requests done and failed, the rate, an ETA or completion, and a running
// outage clock; a log line written meanwhile appears above the bar.
func TestBarViewShowsBlockFigures(t *testing.T) {
	var out syncBuf
	g := &globals{log: zerolog.New(&out)}
	v := newBarView(g, &out, mpb.WithConsoleWriter(fakeTerm{&out}), mpb.WithAutoRefresh())
	outage := engine.OutageView{Open: true, Elapsed: 3 * time.Minute, Budget: 90 * time.Minute, Reserve: 20 * time.Minute}
	v.update("block.pilot[\"c1\"]", engine.Progress{Done: 7, Failed: 2, Total: 16, Rate: "412 tok/s"}, outage)
	lg := v.logger()
	lg.Info().Msg("a log line during the block")
	time.Sleep(300 * time.Millisecond) // one refresh
	v.update("block.pilot[\"c1\"]", engine.Progress{Done: 16, Failed: 2, Total: 16, Rate: "415 tok/s"}, outage)
	v.finish("block.pilot[\"c1\"]", true)
	got := out.String()
	for _, want := range []string{`block.pilot["c1"]`, "7/16 done, 2 failed", "412 tok/s", "16/16 done, 2 failed", "outage 3m", "of 1h30m (20m reserved", "a log line during the block", "done"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if v.p != nil {
		t.Error("the container outlived its last bar")
	}
}

// TestLineViewThrottles logs the first update and the last, and nothing in between
// within 10 s.
func TestLineViewThrottles(t *testing.T) {
	var out bytes.Buffer
	v := &lineView{log: zerolog.New(&out), last: map[string]time.Time{}}
	for i := 1; i <= 5; i++ {
		v.update("block.b", engine.Progress{Done: i, Total: 5, Rate: "10 tok/s"}, engine.OutageView{})
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"done":1`) || !strings.Contains(lines[1], `"done":5`) {
		t.Errorf("want the first and the last update only, got:\n%s", out.String())
	}
}
