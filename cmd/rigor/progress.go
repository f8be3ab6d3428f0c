package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rs/zerolog"
	"github.com/vbauerster/cupwriter"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// lineEvery is how often a step's progress is logged without a terminal.
const lineEvery = 10 * time.Second

// progressView renders the live progress of running steps on stderr: a bar per step
// on a terminal, a log line every 10 s otherwise. stdout is never touched.
type progressView interface {
	// update shows a step's progress; outage is the outage clock now.
	update(addr string, p engine.Progress, outage engine.OutageView)
	// finish ends a step's progress display.
	finish(addr string, ok bool)
	// logger is where other log lines must go so that they do not tear a bar.
	logger() zerolog.Logger
}

// newProgressView picks the bar view when stderr is a terminal and logs are for
// people (console format), and the line view otherwise.
func newProgressView(g *globals) progressView {
	if g.logFormat != "json" && isTerminal(g.stderr) {
		return newBarView(g, g.stderr, behindWrapper(g.stderr))
	}
	return &lineView{log: g.log, last: map[string]time.Time{}}
}

// behindWrapper lets mpb draw on the terminal behind a writer that wraps it (stderr
// redacts secrets): the bytes go through the wrapper, and the terminal's descriptor
// answers mpb's questions about size. Without it mpb sees no terminal and draws
// nothing.
func behindWrapper(w io.Writer) mpb.ContainerOption {
	cw := cupwriter.New(w, true)
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		if f, ok := u.Unwrap().(*os.File); ok {
			cw.SetTermFd(int(f.Fd()))
		}
	}
	return mpb.WithConsoleWriter(cw)
}

// lineView logs one line per step at most every lineEvery, plus the first.
type lineView struct {
	mu   sync.Mutex
	log  zerolog.Logger
	last map[string]time.Time
}

func (v *lineView) update(addr string, p engine.Progress, outage engine.OutageView) {
	v.mu.Lock()
	if time.Since(v.last[addr]) < lineEvery && p.Done < p.Total {
		v.mu.Unlock()
		return
	}
	v.last[addr] = time.Now()
	v.mu.Unlock()
	ev := v.log.Info().Str("step", addr).Int("done", p.Done).Int("failed", p.Failed).Int("total", p.Total)
	if outage.Open {
		ev = ev.Str("outage", outageText(outage))
	}
	ev.Msg(p.Rate)
}

func (v *lineView) finish(addr string, _ bool) {
	v.mu.Lock()
	delete(v.last, addr)
	v.mu.Unlock()
}

func (v *lineView) logger() zerolog.Logger { return v.log }

// barView draws one mpb bar per running step. The container lives while at least one
// bar does; log lines written meanwhile are printed above the bars.
type barView struct {
	mu   sync.Mutex
	out  io.Writer
	opts []mpb.ContainerOption
	p    *mpb.Progress
	bars map[string]*liveBar
	log  zerolog.Logger
}

// liveBar is one step's bar and the figures its decorators read.
type liveBar struct {
	bar *mpb.Bar

	mu     sync.Mutex
	p      engine.Progress
	outage engine.OutageView
	seen   time.Time // when outage was read
}

func newBarView(g *globals, out io.Writer, opts ...mpb.ContainerOption) *barView {
	v := &barView{out: out, opts: opts, bars: map[string]*liveBar{}}
	v.log = g.log.Output(zerolog.ConsoleWriter{Out: barWriter{v}, TimeFormat: time.TimeOnly, NoColor: !isTerminal(out)})
	return v
}

func (v *barView) logger() zerolog.Logger { return v.log }

// barWriter prints above the bars while any is shown, straight to out otherwise.
type barWriter struct{ v *barView }

func (w barWriter) Write(b []byte) (int, error) {
	w.v.mu.Lock()
	p := w.v.p
	w.v.mu.Unlock()
	if p != nil {
		if n, err := p.Write(b); err == nil {
			return n, nil
		}
	}
	return w.v.out.Write(b)
}

func (v *barView) update(addr string, p engine.Progress, outage engine.OutageView) {
	v.mu.Lock()
	if v.p == nil {
		v.p = mpb.New(append([]mpb.ContainerOption{mpb.WithOutput(v.out), mpb.WithWidth(100), mpb.WithRefreshRate(200 * time.Millisecond)}, v.opts...)...)
	}
	lb := v.bars[addr]
	if lb == nil {
		lb = &liveBar{}
		lb.bar = v.p.AddBar(int64(max(p.Total, 1)),
			mpb.PrependDecorators(decor.Name(addr, decor.WCSyncSpaceR)),
			mpb.AppendDecorators(
				decor.Any(lb.counts, decor.WCSyncSpace),
				decor.Any(lb.rate, decor.WCSyncSpace),
				decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace), "done"),
				decor.Any(lb.outageText),
			),
		)
		v.bars[addr] = lb
	}
	v.mu.Unlock()
	lb.mu.Lock()
	lb.p, lb.outage, lb.seen = p, outage, time.Now()
	lb.mu.Unlock()
	lb.bar.SetCurrent(int64(p.Done))
}

func (v *barView) finish(addr string, ok bool) {
	v.mu.Lock()
	lb := v.bars[addr]
	delete(v.bars, addr)
	p := v.p
	last := len(v.bars) == 0
	if last {
		v.p = nil
	}
	v.mu.Unlock()
	if lb != nil {
		if ok {
			lb.bar.SetTotal(-1, true) // complete at the current count
		} else {
			lb.bar.Abort(false) // keep the bar where it stopped
		}
	}
	if last && p != nil {
		p.Wait()
	}
}

func (lb *liveBar) counts(decor.Statistics) string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return fmt.Sprintf("%d/%d done, %d failed", lb.p.Done, lb.p.Total, lb.p.Failed)
}

func (lb *liveBar) rate(decor.Statistics) string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return lb.p.Rate
}

// outageText runs the outage clock on between progress updates.
func (lb *liveBar) outageText(decor.Statistics) string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	if !lb.outage.Open {
		return ""
	}
	o := lb.outage
	o.Elapsed += time.Since(lb.seen)
	return "| outage " + outageText(o)
}
