package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/calibrate"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newCalibrateCmd) }

func newCalibrateCmd(g *globals) *cobra.Command {
	var (
		o      calibrate.Options
		out    string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "calibrate [--concurrency N] [--tokens M] [--requests K] [--agents tcp://HOST:PORT,...]",
		Short: "Measure the client's own timing error against an exact-schedule simulator",
		Long: `Runs the block step's client against the built-in simulator on loopback, streaming
exactly --tokens tokens per request at a fixed --tpot, and compares the client's TTFT
and TPOT with the server's own per-chunk flush times. Prints the p50 and p99 of the
absolute errors, the schedule lag and the CPU per 1,000 tokens (of the whole process:
the simulator runs in it too). With --max-ttft-error or --max-tpot-error it exits 1
when the p99 exceeds the bound. With --agents the block is sent by those rigor
agent processes, split and merged as a block step with agents does, and the table
compares the merged records; the CPU is then the agents' (--listen must be an
address they reach).

Every run is remembered in rigor/calibration.json under the user cache directory
($XDG_CACHE_HOME, else ~/.cache): for an hour, rigor bench records its timing
errors in each result.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Validate fills defaults first, so a zero would silently become one.
			if o.TPOT <= 0 {
				return &exitError{code: 2, msg: fmt.Sprintf("--tpot %s: want a time per output token above 0", o.TPOT)}
			}
			if err := o.Validate(); err != nil {
				return &exitError{code: 2, msg: flagNames(err.Error())}
			}
			if why := outHolds(out); out != "" && why != "" {
				return &exitError{code: 2, msg: fmt.Sprintf("--out %s %s", out, why)}
			}
			ctx, stop := watchInterrupts(g, benchInterrupts)
			defer stop()
			rep, err := runCalibrate(ctx, g, o, out)
			if rep != nil {
				if asJSON {
					enc := json.NewEncoder(g.stdout)
					enc.SetIndent("", "  ")
					if err := enc.Encode(rep); err != nil {
						return err
					}
				} else {
					renderCalibration(g.stdout, rep)
				}
			}
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.Concurrency, "concurrency", 1, "requests in flight")
	f.IntVar(&o.Tokens, "tokens", 256, "tokens streamed per request, exactly")
	f.IntVar(&o.Requests, "requests", 0, "requests (default 4 x concurrency, at least 16)")
	f.DurationVar(&o.TPOT, "tpot", 10*time.Millisecond, "the server's exact time per output token")
	f.DurationVar(&o.FirstToken, "first-token", 0, "the server's time from admission to the first token")
	f.IntVar(&o.NominalContext, "nominal-context", 256, "nominal context of the synthetic prompts")
	f.DurationVar(&o.Timeout, "timeout", 10*time.Minute, "hard bound of the calibration block")
	f.DurationVar(&o.MaxTTFTError, "max-ttft-error", 0, "fail when p99 |TTFT error| exceeds this (0: no gate)")
	f.DurationVar(&o.MaxTPOTError, "max-tpot-error", 0, "fail when p99 |TPOT error| exceeds this (0: no gate)")
	f.StringVar(&out, "out", "", "new or empty directory for calibration.json and requests.jsonl (default: none written)")
	f.BoolVar(&asJSON, "json", false, "print calibration.json to stdout instead of the table")
	f.StringSliceVar(&o.Agents, "agents", nil, "send the block from these rigor agents (tcp://HOST:PORT,...) and compare their merged records")
	f.StringVar(&o.Listen, "listen", "127.0.0.1:0", "where the simulator serves; with --agents on other hosts, an address they reach")
	return cmd
}

// flagNames turns the option names of calibrate.Options.Validate into flag names.
func flagNames(msg string) string {
	for _, n := range []string{"concurrency", "tokens", "requests", "tpot", "max_ttft_error", "max_tpot_error", "agents"} {
		msg = replaceWord(msg, n, "--"+dash(n))
	}
	return msg
}

func dash(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c == '_' {
			b[i] = '-'
		}
	}
	return string(b)
}

// replaceWord replaces old with new where old starts the message or follows a
// space, so "max_tpot_error" is not also rewritten as "max_--tpot-error".
func replaceWord(msg, old, new string) string {
	out := ""
	for i := 0; i < len(msg); {
		if (i == 0 || msg[i-1] == ' ' || msg[i-1] == '\n') && len(msg)-i >= len(old) && msg[i:i+len(old)] == old {
			out += new
			i += len(old)
			continue
		}
		out += msg[i : i+1]
		i++
	}
	return out
}

func runCalibrate(ctx context.Context, g *globals, o calibrate.Options, dir string) (*calibrate.Report, error) {
	var w io.Writer = io.Discard
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(dir, "requests.jsonl"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		w = f
	}
	view := newProgressView(g)
	const addr = "calibrate"
	total := o.Requests
	if total == 0 {
		total = max(4*o.Concurrency, 16)
	}
	tally := steps.NewLoadTally(total)
	o.OnRecord = func(r steps.LoadRecord) {
		if tally.Add(r) {
			view.update(addr, engine.Progress{Done: tally.Done, Failed: tally.Failed, Total: tally.Total, Rate: tally.Rate()}, engine.OutageView{})
		}
	}
	rep, err := calibrate.Run(ctx, o, w)
	view.finish(addr, err == nil)
	if rep == nil {
		return nil, err
	}
	// `rigor bench` records the client's timing error from the last calibration of
	// the hour (benchmeta.go); failing to remember it costs only that.
	if path, merr := rememberCalibration(rep, time.Now()); merr != nil {
		g.log.Warn().Err(merr).Msg("calibration not remembered for rigor bench")
	} else {
		g.log.Debug().Str("path", path).Msg("calibration remembered for rigor bench")
	}
	if dir != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if werr := os.WriteFile(filepath.Join(dir, "calibration.json"), append(b, '\n'), 0o644); werr != nil {
			return rep, werr
		}
	}
	if err != nil {
		return rep, err
	}
	return rep, rep.CheckGates()
}

func renderCalibration(w io.Writer, r *calibrate.Report) {
	fmt.Fprintf(w, "calibration: concurrency %d, %d requests x %d tokens, exact TPOT %.3f ms, first token %.3f ms\n",
		r.Concurrency, r.Requests, r.TokensPerReq, r.ScheduleTPOTMS, r.FirstTokenMS)
	fmt.Fprintf(w, "matched %d of %d requests with the server's truth; %d chunk-count mismatches\n\n", r.Matched, r.Requests, r.ChunkMismatches)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "client error (ms)\tn\tp50 |err|\tp99 |err|\tmax |err|\tmedian signed\t")
	marked := false
	for _, row := range []struct {
		name string
		d    calibrate.ErrorDist
	}{{"TTFT", r.TTFTMS}, {"TPOT", r.TPOTMS}, {"send delay", r.SendDelayMS}, {"receive delay", r.ReceiveDelayMS}} {
		mark := ""
		if row.d.Descriptive && row.d.Samples > 0 {
			mark = "*"
			marked = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f%s\t%.3f\t%+.3f\t\n", row.name, row.d.Samples, v0(row.d.AbsP50), v0(row.d.AbsP99), mark, v0(row.d.AbsMax), v0(row.d.SignedP50))
	}
	tw.Flush()
	if marked {
		fmt.Fprintf(w, "* p99 over fewer than the %d samples that certify it (one-sided 99%%): descriptive only\n", steps.CertifiedFrom(0.99))
	}
	fmt.Fprintf(w, "schedule lag: p50 %.3f ms, p99 %.3f ms (n %d)\n", v0(r.ScheduleLagMS.P50), v0(r.ScheduleLagMS.P99), r.ScheduleLagMS.Samples)
	fmt.Fprintf(w, "CPU: %.4f s per 1,000 tokens (%.3f s for %d tokens; %s)\n", r.CPUSecondsPer1k, r.CPUSeconds, r.StreamedTokens, r.CPUScope)
	if r.Agents != nil {
		for _, a := range r.Agents.Agents {
			fmt.Fprintf(w, "agent %s: slice %d, %d connections, clock offset %+.3f ms ±%.3f ms, %d records, schedule lag p99 %.3f ms, CPU %.3f s\n",
				a.Agent, a.Slice, a.Connections, a.ClockOffsetMS, a.ClockBoundMS, a.Records, v0(a.ScheduleLagMS.P99), a.BlockCPUS)
		}
	}
	for _, g := range r.Gates {
		state := "passed"
		if !g.Passed {
			state = "FAILED"
		}
		fmt.Fprintf(w, "gate %s: p99 %.3f ms <= %s %s\n", g.Name, g.ActualMS, time.Duration(g.BoundMS*1e6), state)
	}
	if errors.Is(r.CheckGates(), calibrate.ErrGate) {
		fmt.Fprintln(w, "result: FAILED")
	} else {
		fmt.Fprintln(w, "result: passed")
	}
}

func v0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
