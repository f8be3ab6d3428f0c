package calibrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"syscall"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/agent"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// ErrGate is returned (wrapped, with the figures) by Report.CheckGates when a bound is
// exceeded.
var ErrGate = errors.New("calibration gate failed")

// CPUScopeProcess names what CPUSeconds covers when the simulator runs in-process.
const CPUScopeProcess = "process: the client and the in-process simulator together (getrusage RUSAGE_SELF over the block clock), an upper bound of the client's share"

// CPUScopeAgents names what CPUSeconds covers when agents sent the block.
const CPUScopeAgents = "agents: the sum of every agent process's CPU over its block clock (getrusage RUSAGE_SELF in each; agents sharing one process each count all of it)"

// CPUScopeClient names what CPUSeconds covers when the server is another process.
const CPUScopeClient = "client process only (getrusage RUSAGE_SELF over the block clock; the server is a separate process)"

// Options configure one calibration run.
type Options struct {
	Concurrency int
	Tokens      int // content tokens per request, exactly (max_tokens)
	// Requests defaults to 4 × Concurrency, at least 16.
	Requests int
	// TPOT defaults to 10 ms; FirstToken defaults to 0 (first token on admission).
	TPOT       time.Duration
	FirstToken time.Duration
	// NominalContext of the synthetic prompts; defaults to 256.
	NominalContext int
	// Timeout is the block hard bound; 0 means none.
	Timeout time.Duration
	// MaxTTFTError and MaxTPOTError gate the p99 |error|; zero means no gate.
	MaxTTFTError time.Duration
	MaxTPOTError time.Duration
	// OnRecord is passed to the client (live progress).
	OnRecord func(loadgen.Record)
	// Agents, when set, sends the calibration block from these `rigor agent`
	// processes (package agent) instead of this process, through the block step's
	// fleet: the same comparison, of the records merged across agents. Listen is
	// then where the simulator serves (default 127.0.0.1:0, which only agents on
	// this machine reach). AgentLimits holds the agents; zero fields take the
	// defaults.
	Agents      []string
	Listen      string
	AgentLimits agent.Limits
}

func (o Options) withDefaults() Options {
	if o.Requests == 0 {
		o.Requests = max(4*o.Concurrency, 16)
	}
	if o.TPOT == 0 {
		o.TPOT = 10 * time.Millisecond
	}
	if o.NominalContext == 0 {
		o.NominalContext = 256
	}
	return o
}

// Validate reports every problem with o, naming the option.
func (o Options) Validate() error {
	o = o.withDefaults()
	var errs []error
	if o.Concurrency < 1 {
		errs = append(errs, fmt.Errorf("concurrency %d: want >= 1", o.Concurrency))
	}
	if o.Tokens < 2 {
		errs = append(errs, fmt.Errorf("tokens %d: want >= 2 (capacity TPOT needs at least two)", o.Tokens))
	}
	if o.Requests < 1 {
		errs = append(errs, fmt.Errorf("requests %d: want >= 1", o.Requests))
	}
	if o.TPOT <= 0 || o.FirstToken < 0 {
		errs = append(errs, fmt.Errorf("tpot %s / first token %s: want tpot > 0 and first token >= 0", o.TPOT, o.FirstToken))
	}
	if o.MaxTTFTError < 0 || o.MaxTPOTError < 0 {
		errs = append(errs, errors.New("max_ttft_error and max_tpot_error must be >= 0"))
	}
	for _, a := range o.Agents {
		if _, err := agent.ParseURL(a); err != nil {
			errs = append(errs, fmt.Errorf("agents: %w", err))
		}
	}
	if len(o.Agents) > o.Concurrency {
		errs = append(errs, fmt.Errorf("agents: %d agents for concurrency %d: each agent needs a connection", len(o.Agents), o.Concurrency))
	}
	return errors.Join(errs...)
}

// ClientConfig is the loadgen configuration of a calibration block against url.
func (o Options) ClientConfig(url, model string) loadgen.Config {
	o = o.withDefaults()
	tokens, effort := o.Tokens, "none"
	temp := 0.0
	return loadgen.Config{
		Endpoint: url, Model: model, Concurrency: o.Concurrency, Requests: o.Requests,
		IDPrefix: "calibration", Timeout: o.Timeout,
		Workload: loadgen.Workload{
			Corpus: corpus.KindSummary, CorpusSeed: 1, NominalContext: o.NominalContext, Prefixes: corpus.PrefixUnique,
			MaxTokens: &tokens, ReasoningEffort: &effort, Temperature: &temp,
		},
		OnRecord: o.OnRecord,
	}
}

// ErrorDist summarises one timing error, in milliseconds.
type ErrorDist struct {
	Samples int `json:"samples"`
	// AbsP50, AbsP99 and AbsMax are percentiles of |error|.
	AbsP50 *float64 `json:"abs_p50"`
	AbsP99 *float64 `json:"abs_p99"`
	AbsMax *float64 `json:"abs_max"`
	// SignedP50 is the median signed error: positive means the client saw it later
	// (or longer) than the server did.
	SignedP50 *float64 `json:"signed_p50"`
	// Descriptive says AbsP99 is over fewer samples than certify a p99
	// (loadgen.Descriptive); the median is certified from far fewer.
	Descriptive bool `json:"descriptive"`
}

func errorDist(xs []float64) ErrorDist {
	d := ErrorDist{Samples: len(xs), Descriptive: loadgen.Descriptive(0.99, len(xs))}
	if len(xs) == 0 {
		return d
	}
	signed := append([]float64(nil), xs...)
	sort.Float64s(signed)
	abs := make([]float64, len(xs))
	for i, x := range xs {
		abs[i] = math.Abs(x)
	}
	sort.Float64s(abs)
	v := func(x float64) *float64 { return &x }
	d.AbsP50, d.AbsP99, d.AbsMax = v(loadgen.Percentile(abs, 0.5)), v(loadgen.Percentile(abs, 0.99)), v(abs[len(abs)-1])
	d.SignedP50 = v(loadgen.Percentile(signed, 0.5))
	return d
}

// Errors is the comparison of client records with server truth.
//
// The truth of a request's TTFT is the server's first token-bearing flush minus the
// arrival of the request's first bytes at the server (the kernel receive time; see
// RequestTruth.RecvNS). The client's TTFT is measured two ways, and both are
// compared with that truth:
//   - TTFTMS: from the client's actual send (the stamp right before the request's
//     one write) to its first output. This is the client's measurement error, the
//     figure the fidelity targets and the max_ttft_error gate bound.
//   - TTFTScheduledMS: from the scheduled send time, as block figures are reported
//     (a client-side wait is never hidden). Its error is the measurement error plus
//     the schedule lag (ScheduleLagMS in the report), shown so that neither hides
//     behind the other.
type Errors struct {
	Matched   int       `json:"matched"` // ok records with server truth for their ID
	Unmatched int       `json:"unmatched"`
	TTFTMS    ErrorDist `json:"ttft_error_ms"`
	// TTFTScheduledMS is the error of the TTFT taken from the scheduled send time.
	TTFTScheduledMS ErrorDist `json:"ttft_from_scheduled_error_ms"`
	TPOTMS          ErrorDist `json:"tpot_error_ms"`
	// SendDelayMS is server arrival − client send stamp; ReceiveDelayMS is client
	// TTFO − server first flush. Their sum is the TTFT error. They use the block's
	// UTC anchor against the server's wall clock, so they are meaningful on one
	// machine only.
	SendDelayMS    ErrorDist `json:"send_delay_ms"`
	ReceiveDelayMS ErrorDist `json:"receive_delay_ms"`
	// ServerQueueMS is server handler entry − arrival: the server's own queueing
	// before its handler ran, inside the truth (not a client error). It is what a
	// truth taken at handler entry would wrongly have charged to the client.
	ServerQueueMS ErrorDist `json:"server_queue_ms"`
	// ArrivalSources counts the requests by how their arrival was taken (kernel,
	// read, handler).
	ArrivalSources map[string]int `json:"arrival_sources"`
	// ChunkMismatches counts matched requests whose server chunk count differs from
	// the client's content chunk count (a lost or merged event).
	ChunkMismatches int `json:"chunk_mismatches"`
}

// Analyze compares records with truth. Only records with outcome ok and a truth
// entry are compared; the others are counted in Unmatched.
func Analyze(records []loadgen.Record, anchors *loadgen.Anchors, truth map[string]RequestTruth) Errors {
	e := Errors{ArrivalSources: map[string]int{}}
	var ttft, ttftSched, tpot, send, recv, queue []float64
	var anchorNS int64
	if anchors != nil {
		anchorNS = anchors.Before.UTC.UnixNano() - int64(anchors.Before.MonoMS*1e6)
	}
	for _, r := range records {
		tr, ok := truth[r.ID]
		arrival, source := tr.RecvNS, tr.RecvSource
		if arrival == 0 {
			arrival, source = tr.HandlerNS, RecvNone
		}
		if source == "" {
			source = RecvKernel
		}
		if r.Outcome != loadgen.OK || !ok || tr.Chunks == 0 || arrival == 0 || r.TTFOAtMS == nil || r.ScheduledAtMS == nil {
			e.Unmatched++
			continue
		}
		e.Matched++
		e.ArrivalSources[source]++
		if tr.Chunks != r.ContentChunks+r.ReasoningChunks {
			e.ChunkMismatches++
		}
		trueTTFT := float64(tr.FirstNS-arrival) / 1e6
		sendAt := r.ScheduledAtMS
		if r.SendAtMS != nil {
			sendAt = r.SendAtMS
		}
		ttft = append(ttft, *r.TTFOAtMS-*sendAt-trueTTFT)
		ttftSched = append(ttftSched, *r.TTFOAtMS-*r.ScheduledAtMS-trueTTFT)
		if tr.HandlerNS != 0 && tr.RecvNS != 0 {
			queue = append(queue, float64(tr.HandlerNS-tr.RecvNS)/1e6)
		}
		if c, ok := loadgen.TPOTMillis(r); ok && tr.Tokens >= 2 {
			trueTPOT := float64(tr.LastNS-tr.FirstNS) / 1e6 / float64(tr.Tokens-1)
			tpot = append(tpot, c-trueTPOT)
		}
		if anchors != nil {
			sent := anchorNS + int64(*sendAt*1e6)
			ttfo := anchorNS + int64(*r.TTFOAtMS*1e6)
			send = append(send, float64(arrival-sent)/1e6)
			recv = append(recv, float64(ttfo-tr.FirstNS)/1e6)
		}
	}
	e.TTFTMS, e.TTFTScheduledMS, e.TPOTMS = errorDist(ttft), errorDist(ttftSched), errorDist(tpot)
	e.SendDelayMS, e.ReceiveDelayMS, e.ServerQueueMS = errorDist(send), errorDist(recv), errorDist(queue)
	return e
}

// Gate is one bound and whether it held.
type Gate struct {
	Name     string  `json:"name"` // max_ttft_error or max_tpot_error
	BoundMS  float64 `json:"bound_ms"`
	ActualMS float64 `json:"actual_ms"` // p99 |error|; +Inf is written as -1 when there were no samples
	Passed   bool    `json:"passed"`
}

// Report is calibration.json.
type Report struct {
	Concurrency    int     `json:"concurrency"`
	TokensPerReq   int     `json:"tokens_per_request"`
	Requests       int     `json:"requests"`
	ScheduleTPOTMS float64 `json:"schedule_tpot_ms"`
	FirstTokenMS   float64 `json:"schedule_first_token_ms"`
	NominalContext int     `json:"nominal_context"`

	Outcomes map[loadgen.Outcome]int `json:"outcomes"`
	WallS    float64                 `json:"wall_s"`
	Errors
	ScheduleLagMS loadgen.Dist       `json:"schedule_lag_ms"`
	Dial          *loadgen.DialStats `json:"dial,omitempty"`

	StreamedTokens   int     `json:"streamed_tokens"`
	CPUSeconds       float64 `json:"cpu_s"`
	CPUSecondsPer1k  float64 `json:"cpu_s_per_1k_tokens"`
	CPUScope         string  `json:"cpu_scope"`
	AggregateTokS    float64 `json:"aggregate_output_tok_s"`
	Gates            []Gate  `json:"gates"`
	Passed           bool    `json:"passed"`
	Method           string  `json:"method"`
	PercentileMethod string  `json:"percentile_method"`
	// Agents, when agents sent the block: each agent's clock, CPU, lag and records.
	Agents *agent.Report `json:"agents,omitempty"`
}

// Method describes, in calibration.json, how the figures were taken.
const Method = "TTFT error = (client ttfo_at - send_at) - (server first chunk flush - request arrival), where send_at is stamped right before the request's one write and the arrival is the kernel receive time (SO_TIMESTAMPNS) of the server's socket read that returned the request's first bytes; ttft_from_scheduled_error uses scheduled_at instead of send_at (measurement error plus schedule lag); TPOT error = client capacity TPOT - (server last flush - server first flush)/(tokens - 1); exact schedule: fixed TPOT, no jitter, no batch slope"

// NewReport assembles the report of a finished block.
func NewReport(o Options, res *loadgen.Result, records []loadgen.Record, truth map[string]RequestTruth, cpu time.Duration, scope string) *Report {
	o = o.withDefaults()
	rep := &Report{
		Concurrency: o.Concurrency, TokensPerReq: o.Tokens, Requests: o.Requests,
		ScheduleTPOTMS: ms(o.TPOT), FirstTokenMS: ms(o.FirstToken), NominalContext: o.NominalContext,
		Outcomes: res.Outcomes, WallS: res.WallS, ScheduleLagMS: res.ScheduleLagMS, Dial: res.Dial,
		Errors: Analyze(records, res.Anchors, truth), CPUScope: scope, AggregateTokS: res.AggregateOutputTokS,
		Method: Method, PercentileMethod: loadgen.PercentileMethod, Gates: []Gate{},
	}
	for _, r := range records {
		if r.Usage != nil {
			rep.StreamedTokens += r.Usage.CompletionTokens
		}
	}
	rep.CPUSeconds = cpu.Seconds()
	if rep.StreamedTokens > 0 {
		rep.CPUSecondsPer1k = rep.CPUSeconds / float64(rep.StreamedTokens) * 1000
	}
	gate := func(name string, bound time.Duration, d ErrorDist) {
		if bound <= 0 {
			return
		}
		g := Gate{Name: name, BoundMS: ms(bound), ActualMS: -1}
		if d.AbsP99 != nil {
			g.ActualMS = *d.AbsP99
			g.Passed = g.ActualMS <= g.BoundMS
		}
		rep.Gates = append(rep.Gates, g)
	}
	gate("max_ttft_error", o.MaxTTFTError, rep.TTFTMS)
	gate("max_tpot_error", o.MaxTPOTError, rep.TPOTMS)
	rep.Passed = rep.Matched > 0 && rep.Unmatched == 0
	for _, g := range rep.Gates {
		rep.Passed = rep.Passed && g.Passed
	}
	return rep
}

// CheckGates returns nil when every gate held and every request was matched,
// otherwise an error wrapping ErrGate that names what failed.
func (r *Report) CheckGates() error {
	var errs []error
	if r.Matched == 0 || r.Unmatched > 0 {
		errs = append(errs, fmt.Errorf("%d of %d requests could not be compared with the server's truth (outcomes %v)", r.Unmatched, r.Requests, r.Outcomes))
	}
	for _, g := range r.Gates {
		if !g.Passed {
			if g.ActualMS < 0 {
				errs = append(errs, fmt.Errorf("%s: no samples", g.Name))
				continue
			}
			errs = append(errs, fmt.Errorf("%s: p99 |error| %.3f ms > %s", g.Name, g.ActualMS, time.Duration(g.BoundMS*1e6)))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrGate, errors.Join(errs...))
}

// Run calibrates the client in-process: an exact-schedule simulator on loopback and
// loadgen.Run against it. Records go to out (requests.jsonl) as they finish. The
// returned error is a configuration or start-up problem, or the block's own error
// (hard bound, cancellation); gates are checked by the caller with CheckGates.
func Run(ctx context.Context, o Options, out io.Writer) (*Report, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	addr := o.Listen
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ts, err := ListenTruth(addr, Schedule{TPOT: o.TPOT, FirstToken: o.FirstToken, MaxRunning: o.Concurrency})
	if err != nil {
		return nil, err
	}
	defer ts.Close()
	cfg := o.ClientConfig(ts.URL(), ts.Model())
	var records []loadgen.Record
	user := cfg.OnRecord
	cfg.OnRecord = func(r loadgen.Record) {
		records = append(records, r) // calls never overlap (loadgen.Config.OnRecord)
		if user != nil {
			user(r)
		}
	}
	var (
		res    *loadgen.Result
		agents *agent.Report
		runErr error
		scope  = CPUScopeProcess
	)
	if len(o.Agents) > 0 {
		f := agent.Fleet{Agents: o.Agents, Limits: o.AgentLimits}
		res, agents, runErr = f.Run(ctx, cfg, out)
		scope = CPUScopeAgents
	} else {
		res, runErr = loadgen.Run(ctx, cfg, out)
	}
	if res == nil {
		return nil, runErr
	}
	// The block clock's window only: prompt rendering, dialling and the pre-block
	// collection are setup, not the cost of streaming.
	cpu := time.Duration(res.BlockCPUS * float64(time.Second))
	rep := NewReport(o, res, records, ts.Truth.Snapshot(), cpu, scope)
	rep.Agents = agents
	return rep, runErr
}

// ProcessCPU is the user plus system CPU time of this process so far.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
