package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// ErrAgent is wrapped by every Failure.
var ErrAgent = errors.New("agent failed")

// Failure names the agent that failed and why. Its records received so far are
// kept whatever the reason.
type Failure struct {
	Agent  string
	Reason string
}

func (f *Failure) Error() string { return fmt.Sprintf("agent %s %s", f.Agent, f.Reason) }

// Unwrap makes errors.Is(err, ErrAgent) hold.
func (f *Failure) Unwrap() error { return ErrAgent }

// Limits are the bounds an agent is held to; zero fields take the defaults.
type Limits struct {
	// MaxClockBound: the error bound of an agent's clock offset (half the shortest
	// round trip of the clock exchanges, less the agent's turnaround) above which
	// the block does not start. Default 5 ms.
	MaxClockBound time.Duration `json:"-"`
	// MaxCPUShare: the share of its CPUs an agent may use over the block clock
	// (client CPU seconds / wall seconds / CPUs) before it counts as saturated: a
	// saturated client delays its own timestamps. Default 0.9.
	MaxCPUShare float64 `json:"max_cpu_share"`
	// MaxScheduleLag: the p99 schedule lag an agent may show (send − scheduled):
	// beyond it the agent's dispatcher, not the target, set the pace. Default 100 ms.
	MaxScheduleLag time.Duration `json:"-"`
	// Silence: how long an agent may send nothing (records or heartbeats) before it
	// counts as gone. Default 5 s.
	Silence time.Duration `json:"-"`
	// Ready: how long the start barrier waits for every agent to render its prompts
	// and dial its connections. Default 2 min.
	Ready time.Duration `json:"-"`

	MaxClockBoundMS  float64 `json:"max_clock_bound_ms"`
	MaxScheduleLagMS float64 `json:"max_schedule_lag_p99_ms"`
	SilenceS         float64 `json:"silence_s"`
}

func (l Limits) withDefaults() Limits {
	if l.MaxClockBound == 0 {
		l.MaxClockBound = 5 * time.Millisecond
	}
	if l.MaxCPUShare == 0 {
		l.MaxCPUShare = 0.9
	}
	if l.MaxScheduleLag == 0 {
		l.MaxScheduleLag = 100 * time.Millisecond
	}
	if l.Silence == 0 {
		l.Silence = 5 * time.Second
	}
	if l.Ready == 0 {
		l.Ready = 2 * time.Minute
	}
	l.MaxClockBoundMS, l.MaxScheduleLagMS, l.SilenceS = ms(l.MaxClockBound), ms(l.MaxScheduleLag), l.Silence.Seconds()
	return l
}

// Report is what result.json states about the agents of a block.
type Report struct {
	Limits Limits        `json:"limits"`
	Agents []AgentReport `json:"agents"`
	// StartUTC is T0, the block clock's origin on the authority's wall clock.
	StartUTC *time.Time `json:"start_utc,omitempty"`
}

// AgentReport is one agent's part of a block.
type AgentReport struct {
	Agent       string `json:"agent"`
	Slice       int    `json:"slice"` // k of loadgen.Slice
	Connections int    `json:"connections"`
	CPUs        int    `json:"cpus"` // the agent's GOMAXPROCS
	// ClockOffsetMS is the agent's clock minus the authority's; ClockBoundMS bounds
	// its error; RoundTripMS is the exchange it was taken from.
	ClockOffsetMS float64 `json:"clock_offset_ms"`
	ClockBoundMS  float64 `json:"clock_bound_ms"`
	RoundTripMS   float64 `json:"round_trip_ms"`
	// BlockCPUS is the agent process's CPU seconds over its block clock; CPUShare
	// divides them by the seconds of that clock (T0 to the end of its run) and the
	// agent's CPUs.
	BlockCPUS     float64      `json:"block_cpu_s"`
	CPUShare      float64      `json:"cpu_share"`
	ScheduleLagMS loadgen.Dist `json:"schedule_lag_ms"`
	Planned       int          `json:"planned"` // requests of its slice
	Records       int          `json:"records"` // records it sent back
	Failure       string       `json:"failure,omitempty"`
}

// Fleet runs blocks on a fixed list of agents, each named by a tcp://host:port URL.
type Fleet struct {
	Agents []string
	Limits Limits
}

// ParseURL checks one agent URL (tcp://HOST:PORT) and returns HOST:PORT: the
// language's check, so a plan that validated names agents the fleet can dial.
func ParseURL(s string) (string, error) { return plans.ParseAgentURL(s) }

// clockSamples is how many exchanges measure each agent's clock.
const clockSamples = 16

// peer is the authority's side of one agent.
type peer struct {
	addr  string // the URL, as the plan names it
	k     int
	c     *conn
	msgs  chan message
	quit  chan struct{} // closed when the run is over: readLoop stops handing on
	err   error         // set before msgs is closed
	rep   AgentReport
	off   time.Duration // agent clock − authority clock
	res   *loadgen.Result
	fail  *Failure
	owned []int // request indices of its slice
	got   map[int]bool
}

func (p *peer) failf(format string, args ...any) *Failure {
	if p.fail == nil {
		p.fail = &Failure{Agent: p.addr, Reason: fmt.Sprintf(format, args...)}
		p.rep.Failure = p.fail.Reason
	}
	return p.fail
}

// next is the agent's next message, or an error when it goes silent or away.
func (p *peer) next(ctx context.Context, silence time.Duration) (message, error) {
	t := time.NewTimer(silence)
	defer t.Stop()
	select {
	case m, ok := <-p.msgs:
		if !ok {
			return message{}, p.err
		}
		return m, nil
	case <-t.C:
		return message{}, fmt.Errorf("sent nothing for %s", silence)
	case <-ctx.Done():
		return message{}, ctx.Err()
	}
}

func (p *peer) readLoop() {
	defer close(p.msgs)
	for {
		m, err := p.c.read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("closed its connection")
			}
			p.err = err
			return
		}
		select {
		case p.msgs <- m:
		case <-p.quit:
			return
		}
	}
}

// Run runs the block cfg on the fleet and writes the merged records to out as they
// arrive. Its contract is loadgen.Run's: a nil Result means nothing was sent. The
// Report is returned whenever the agents were reached, with the Result or not.
func (f *Fleet) Run(ctx context.Context, cfg loadgen.Config, out io.Writer) (*loadgen.Result, *Report, error) {
	lim := f.Limits.withDefaults()
	rep := &Report{Limits: lim}
	n := len(f.Agents)
	switch {
	case n == 0:
		return nil, nil, fmt.Errorf("%w: no agents", loadgen.ErrConfig)
	case cfg.Source != nil:
		return nil, nil, fmt.Errorf("%w: agents render the workload's corpus; a prompt source is a local file they cannot read", loadgen.ErrConfig)
	case cfg.Duration > 0:
		return nil, nil, fmt.Errorf("%w: a dispatch window is not supported across agents", loadgen.ErrConfig)
	}
	// Every slice must be valid before any agent is asked: the last slice is the
	// smallest.
	last := cfg
	last.Slice = &loadgen.Slice{Index: n - 1, Of: n}
	if err := last.Validate(); err != nil {
		return nil, nil, err
	}
	if out == nil {
		out = io.Discard
	}
	peers := make([]*peer, n)
	for k, a := range f.Agents {
		peers[k] = &peer{addr: a, k: k, msgs: make(chan message, 1024), quit: make(chan struct{}), got: map[int]bool{}}
		peers[k].rep = AgentReport{Agent: a, Slice: k, Connections: (&loadgen.Slice{Index: k, Of: n}).Connections(cfg.Concurrency)}
		for i := range cfg.Requests {
			if i%n == k {
				peers[k].owned = append(peers[k].owned, i)
			}
		}
		peers[k].rep.Planned = len(peers[k].owned)
	}
	report := func() *Report {
		rep.Agents = make([]AgentReport, n)
		for k, p := range peers {
			rep.Agents[k] = p.rep
		}
		return rep
	}
	defer func() {
		for _, p := range peers {
			close(p.quit)
			if p.c != nil {
				p.c.nc.Close()
			}
		}
	}()

	// Connect and measure every clock, all agents at once.
	var wg sync.WaitGroup
	for _, p := range peers {
		wg.Go(func() { p.connect(ctx, lim) })
	}
	wg.Wait()
	if err := firstFailure(peers); err != nil {
		return nil, report(), err
	}

	// The start barrier: every agent has its job, its prompts and its connections.
	for _, p := range peers {
		jc := cfg
		jc.Slice = &loadgen.Slice{Index: p.k, Of: n}
		jc.OnRecord, jc.OnStart, jc.StartAt = nil, nil, nil
		if err := p.c.send(message{T: kindJob, Job: &job{Config: jc, APIKey: string(cfg.APIKey)}}); err != nil {
			p.failf("did not take its job: %v", err)
		}
	}
	var (
		warmMu sync.Mutex
		warm   error
	)
	for _, p := range peers {
		if p.fail != nil {
			continue
		}
		wg.Go(func() {
			deadline, cancel := context.WithTimeout(ctx, lim.Ready)
			defer cancel()
			for {
				m, err := p.next(deadline, lim.Silence)
				switch {
				case err != nil:
					p.failf("was not ready to start: %v", err)
				case m.T == kindBeat:
					continue
				case m.T == kindError && m.Warmup:
					p.rep.Failure = "warm-up: " + m.Error
					warmMu.Lock()
					if warm == nil {
						warm = fmt.Errorf("agent %s: %s", p.addr, m.Error)
					}
					warmMu.Unlock()
				case m.T == kindError:
					p.failf("refused its job: %s", m.Error)
				case m.T != kindReady:
					p.failf("sent %q before it was ready", m.T)
				}
				return
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, report(), fmt.Errorf("cancelled before the block started: %w", ctx.Err())
	}
	if err := firstFailure(peers); err != nil {
		return nil, report(), err
	}
	if warm != nil {
		// The target refused an agent's connections: nothing was sent, as with one
		// client (loadgen.ErrWarmup).
		return nil, report(), fmt.Errorf("%w: %w", loadgen.ErrWarmup, warm)
	}

	// One start for all: far enough ahead that every start message arrives first.
	var maxRTT time.Duration
	for _, p := range peers {
		maxRTT = max(maxRTT, time.Duration(p.rep.RoundTripMS*1e6))
	}
	now := time.Now()
	origin := now.Add(100*time.Millisecond + 4*maxRTT)
	t0 := origin.UTC().Round(0)
	rep.StartUTC = &t0
	for _, p := range peers {
		if err := p.c.send(message{T: kindStart, AtNS: t0.Add(p.off).UnixNano()}); err != nil {
			p.failf("did not take the start: %v", err)
		}
	}
	if cfg.OnStart != nil {
		cfg.OnStart()
	}
	time.Sleep(time.Until(origin))

	// Collect: every record goes to out as it arrives, in one client's format.
	var (
		mu       sync.Mutex
		records  []loadgen.Record
		writeErr error
		stopOnce sync.Once
	)
	cancelAll := func() {
		stopOnce.Do(func() {
			for _, p := range peers {
				_ = p.c.send(message{T: kindCancel})
			}
		})
	}
	keep := func(rec loadgen.Record) {
		line, err := json.Marshal(rec)
		mu.Lock()
		defer mu.Unlock()
		records = append(records, rec)
		if err == nil {
			_, err = out.Write(append(line, '\n'))
		}
		if err != nil && writeErr == nil {
			writeErr = err
		}
		if cfg.OnRecord != nil {
			cfg.OnRecord(rec)
		}
	}
	stop := context.AfterFunc(ctx, cancelAll)
	defer stop()
	for _, p := range peers {
		if p.fail != nil {
			continue
		}
		wg.Go(func() {
			for {
				// The authority's own cancellation does not end collection: the
				// agents answer a cancel with their records and result.
				m, err := p.next(context.Background(), lim.Silence)
				switch {
				case err != nil:
					p.failf("disappeared mid-block: %v", err)
					cancelAll()
					return
				case m.T == kindRecord && m.Record != nil:
					p.got[m.Record.Index] = true
					p.rep.Records++
					keep(*m.Record)
				case m.T == kindDone:
					p.res = m.Result
					return
				case m.T == kindError:
					p.failf("failed mid-block: %s", m.Error)
					cancelAll()
					return
				}
			}
		})
	}
	wg.Wait()
	after := time.Now()

	// A lost agent's requests that sent no record stay in the population.
	for _, p := range peers {
		if p.fail == nil {
			continue
		}
		for _, i := range p.owned {
			if p.got[i] {
				continue
			}
			keep(loadgen.Record{
				ID: cfg.RequestID(i), Index: i, Repetition: cfg.Repetition, Concurrency: cfg.Concurrency,
				NominalContext: cfg.Workload.NominalContext, Outcome: loadgen.Cancelled,
				Error: "no record: agent " + p.addr + " " + p.fail.Reason,
			})
		}
	}
	sort.SliceStable(records, func(a, b int) bool { return records[a].Index < records[b].Index })
	res := loadgen.Summarize(records)
	res.Concurrency = cfg.Concurrency
	res.SlotSecondsPerRequest = loadgen.SlotSecondsPerRequest(res.WallS, res.Requests, cfg.Concurrency)
	res.Anchors = &loadgen.Anchors{Before: loadgen.Anchor{UTC: t0}, After: loadgen.Anchor{UTC: after.UTC().Round(0), MonoMS: ms(after.Sub(origin))}}
	dial := loadgen.DialStats{WarmMS: []float64{}, InBlockMS: []float64{}}
	for _, p := range peers {
		if p.res == nil {
			continue
		}
		res.BlockCPUS += p.res.BlockCPUS
		if d := p.res.Dial; d != nil {
			dial.Warm += d.Warm
			dial.WarmMS = append(dial.WarmMS, d.WarmMS...)
			dial.InBlock += d.InBlock
			dial.InBlockMS = append(dial.InBlockMS, d.InBlockMS...)
			dial.InBlockFails += d.InBlockFails
		}
		p.rep.BlockCPUS = p.res.BlockCPUS
		p.rep.ScheduleLagMS = p.res.ScheduleLagMS
		// The agent's block clock runs from T0 to the end of its run (its after
		// anchor): the span its CPU figure was taken over.
		if a := p.res.Anchors; a != nil && a.After.MonoMS > 0 && p.rep.CPUs > 0 {
			p.rep.CPUShare = p.res.BlockCPUS / (a.After.MonoMS / 1000) / float64(p.rep.CPUs)
		}
		if p.rep.CPUShare > lim.MaxCPUShare {
			p.failf("saturated: its client used %.0f%% of its %d CPUs over the block clock (limit %.0f%%)", 100*p.rep.CPUShare, p.rep.CPUs, 100*lim.MaxCPUShare)
		}
		if lag := p.res.ScheduleLagMS.P99; lag != nil && *lag > lim.MaxLagMS() {
			p.failf("lagged: p99 schedule lag %.1f ms exceeds %s", *lag, lim.MaxScheduleLag)
		}
	}
	res.Dial = &dial

	var errs []error
	if err := firstFailure(peers); err != nil {
		errs = append(errs, err)
	}
	if res.Incomplete && ctx.Err() != nil {
		errs = append(errs, fmt.Errorf("loadgen: block cancelled: %w", ctx.Err()))
	} else if res.Incomplete && firstFailure(peers) == nil {
		errs = append(errs, fmt.Errorf("%w: %s", loadgen.ErrBlockBound, cfg.Timeout))
	}
	if writeErr != nil {
		errs = append(errs, fmt.Errorf("%w: %w", loadgen.ErrWrite, writeErr))
	}
	return &res, report(), errors.Join(errs...)
}

// MaxLagMS is MaxScheduleLag in milliseconds.
func (l Limits) MaxLagMS() float64 { return ms(l.MaxScheduleLag) }

// connect dials the agent, checks its version and measures its clock.
func (p *peer) connect(ctx context.Context, lim Limits) {
	hostport, err := ParseURL(p.addr)
	if err != nil {
		p.failf("%v", err)
		return
	}
	d := net.Dialer{Timeout: lim.Silence}
	nc, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		p.failf("is unreachable: %v", err)
		return
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	p.c = newConn(nc)
	go p.readLoop()
	m, err := p.next(ctx, lim.Silence)
	switch {
	case err != nil:
		p.failf("did not greet: %v", err)
		return
	case m.T != kindHello || m.Version != Version:
		p.failf("speaks protocol %q version %d, not version %d: run the same rigor on both ends", m.T, m.Version, Version)
		return
	}
	p.rep.CPUs = m.CPUs
	best := time.Duration(-1)
	for range clockSamples {
		t0 := time.Now()
		if err := p.c.send(message{T: kindClock}); err != nil {
			p.failf("clock exchange: %v", err)
			return
		}
		m, err := p.next(ctx, lim.Silence)
		if err != nil || m.T != kindClock {
			p.failf("clock exchange: %v (%q)", err, m.T)
			return
		}
		// Wall readings of the authority: t0's, and t3 from it on the monotonic clock,
		// so a wall-clock step during the exchange cannot enter the offset.
		t0w := t0.UnixNano()
		rtt := m.at.Sub(t0)
		t3w := t0w + int64(rtt)
		turn := time.Duration(m.SendNS - m.RecvNS)
		delay := rtt - turn
		if best >= 0 && delay >= best {
			continue
		}
		best = delay
		p.off = time.Duration(((m.RecvNS - t0w) + (m.SendNS - t3w)) / 2)
		p.rep.ClockOffsetMS, p.rep.ClockBoundMS, p.rep.RoundTripMS = ms(p.off), ms(delay/2), ms(rtt)
	}
	if bound := best / 2; bound > lim.MaxClockBound {
		p.failf("clock offset cannot be bounded: ±%s exceeds the limit %s (round trip %s)", bound, lim.MaxClockBound, best)
	}
}

// firstFailure is the failure of the first agent, in declared order, that failed.
func firstFailure(peers []*peer) error {
	for _, p := range peers {
		if p.fail != nil {
			return p.fail
		}
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
