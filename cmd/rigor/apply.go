package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/report"
	"github.com/spf13/cobra"
)

func newApplyCmd(g *globals) *cobra.Command {
	var a planArgs
	var state string
	var parallelism int
	var holdUnresolvable bool
	cmd := &cobra.Command{
		Use:   "apply CAMPAIGN",
		Short: "Run a campaign: freeze on first use, resume after, always restore",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: 2, msg: "--state is required: the directory that keeps this campaign's plan, journal and evidence"}
			}
			if parallelism < 1 {
				return &exitError{code: 2, msg: fmt.Sprintf("--parallelism %d: want 1 or more steps at once", parallelism)}
			}
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			if holdUnresolvable {
				if why := holdPointMissing(p); why != "" {
					return &exitError{code: exitUsage, msg: "--hold-unresolvable: " + why}
				}
			}
			// What the events have said (the apply journaled its start, an
			// always-step started, an outage is open): what a second or third
			// interrupt would leave behind depends on it.
			var journaled, restoring, outageOpen atomic.Bool
			ctx, stop := interruptContext(g, interruptState{journaled.Load, restoring.Load, outageOpen.Load})
			defer stop()
			view := newProgressView(g)
			observe := observer(g, view)
			sum, err := engine.Apply(ctx, p, steps.Registry(), engine.Options{
				StateDir: state, Log: g.log, Parallelism: parallelism, Rigor: buildVersion(), Redactor: g.redact,
				Observe: func(e engine.Event) {
					if e.Kind != "progress" {
						outageOpen.Store(e.Outage.Open)
					}
					switch {
					case e.Kind == "apply_start":
						journaled.Store(true)
					case e.Kind == "step_start" && e.Always:
						restoring.Store(true)
					}
					observe(e)
				},
				Gate: pilotGate(view, p, state, holdUnresolvable),
			})
			if err != nil {
				var locked *engine.ErrLocked
				switch {
				case errors.Is(err, engine.ErrClosed):
					return &exitError{code: exitClosed, msg: err.Error()}
				case errors.As(err, &locked):
					return &exitError{code: exitError1, msg: err.Error()}
				case errors.Is(err, engine.ErrPlanChanged), errors.Is(err, engine.ErrInputsChanged):
					return &exitError{code: exitError1, msg: err.Error()}
				}
				return err
			}
			// The verdict is computed as `rigor report` computes it; a state whose
			// evidence cannot be read still ends with the outcome and what to do.
			brief, berr := report.BriefFromState(state)
			return &exitError{code: renderApply(g, p.Campaign.Name, args[0], state, p.Campaign.Outage != nil, sum, brief, berr)}
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory (created on first apply)")
	cmd.Flags().IntVar(&parallelism, "parallelism", 4, "most steps running at once (a capture running during its block does not count); steps sharing a uses resource never overlap, and a step without uses runs alone")
	cmd.Flags().BoolVar(&holdUnresolvable, "hold-unresolvable", false, "after the pilot, hold the campaign before any further step while the decision rule cannot be resolved with its declared repetitions, so it can be amended prospectively with rigor plan diff --record")
	a.bind(cmd)
	return cmd
}

// renderApply prints how the apply ended, loudly when the incumbent may not be
// serving, then the verdict and the next command, and returns the exit code that
// says the same.
func renderApply(g *globals, name, campaign, state string, hasOutage bool, sum *engine.Summary, brief *report.Brief, briefErr error) int {
	w := g.stdout
	red := func(s string) string {
		if isTerminal(w) {
			return "\x1b[1;31m" + s + "\x1b[0m"
		}
		return s
	}
	status := sum.Status
	if sum.Cause != "" {
		status += " (" + sum.Cause + ")"
	}
	if sum.Status == engine.EndRestoreFailed {
		status = red("RESTORE FAILED")
	}
	fmt.Fprintf(w, "campaign %s: %s%s\n", name, status, countsText(sum.Counts))
	if sum.Reason != "" {
		fmt.Fprintf(w, "reason: %s\n", sum.Reason)
	}
	code := exitOK
	switch sum.Status {
	case engine.EndHeld:
		code = exitHeld
		restored, window := "", ""
		if sum.Outage != nil {
			restored = "the incumbent was restored; "
		}
		if hasOutage {
			window = " (in a new outage window)"
		}
		switch {
		case sum.Exhausted:
			fmt.Fprintf(w, "held: %snothing is left that applying again could run; after review, `rigor close --state %s --reason \"...\"` closes the campaign\n", restored, state)
		case sum.Settled:
			fmt.Fprintf(w, "held: %severy step has run; applying again completes the campaign without running a step, `rigor close --state %s --reason \"...\"` closes it instead\n", restored, state)
		default:
			fmt.Fprintf(w, "held: %sapplying again continues with what has not run%s, `rigor close --state %s --reason \"...\"` closes the campaign for good\n", restored, window, state)
		}
	case engine.EndRestoreFailed:
		code = exitRestoreFailed
		for _, f := range sum.RestoreFailures {
			fmt.Fprintln(w, red("restore failed: "+f))
		}
		switch o := sum.Outage; {
		case o != nil && o.Open:
			fmt.Fprintln(w, red("THE OUTAGE IS STILL OPEN: the incumbent may not be serving."))
		case o != nil:
			fmt.Fprintln(w, red("the outage was closed, but an always-step did not succeed: the incumbent may not be as the plan declares."))
		default:
			fmt.Fprintln(w, red("no outage was opened, but the restore did not confirm the incumbent: it may not be as the plan declares."))
		}
		fmt.Fprintf(w, "by hand: check the incumbent (its container or process, its endpoint's health) and bring it back if it is down; `rigor status --state %s` shows the failed checks. The next apply retries the restore before anything else.\n", state)
	}
	if o := sum.Outage; o != nil {
		switch {
		case o.Open:
			fmt.Fprintf(w, "outage: window %d OPEN for %s of its %s budget\n", o.Window, shortDuration(o.Elapsed.Truncate(time.Second)), shortDuration(o.Budget))
		default:
			fmt.Fprintf(w, "outage: window %d closed after %s of its %s budget\n", o.Window, shortDuration(o.Elapsed.Truncate(time.Second)), shortDuration(o.Budget))
		}
		if o.Overrun {
			fmt.Fprintln(w, red(fmt.Sprintf("OUTAGE OVERRUN: the incumbent was out of service for %s, %s over the %s budget", shortDuration(o.Elapsed.Truncate(time.Second)), shortDuration(o.Elapsed-o.Budget), shortDuration(o.Budget))))
			if code == exitOK || code == exitHeld {
				code = exitOverrun
			}
		}
	}
	if sum.EvidenceError != "" {
		fmt.Fprintln(w, red("EVIDENCE INCOMPLETE: "+sum.EvidenceError))
		switch {
		case sum.Rescue != "":
			fmt.Fprintf(w, "journal records the state directory could not take were written to %s; the journal on disk is a verifiable prefix of them\n", sum.Rescue)
		case len(sum.Unwritten) > 0:
			fmt.Fprintf(g.stderr, "journal records that could not be written anywhere (%d), as JSON lines:\n", len(sum.Unwritten))
			for _, l := range sum.Unwritten {
				g.stderr.Write(l)
			}
		}
	}
	fmt.Fprintf(w, "state: %s (check the evidence with `rigor verify --state %s`)\n", state, state)
	fmt.Fprintf(w, "journal head %s (keep it: `rigor verify --head` checks that no record up to it was cut or rewritten)\n", engine.Head{Seq: sum.HeadSeq, SHA256: sum.HeadSHA256})
	if briefErr != nil {
		fmt.Fprintf(w, "verdict: not computed: %v\n", briefErr)
	} else {
		fmt.Fprintln(w, brief.Text(sum.Status == engine.EndCompleted))
	}
	fmt.Fprintln(w, "next: "+nextCommand(campaign, state, sum))
	return code
}

// nextCommand is what to run after an apply that ended with status.
func nextCommand(campaign, state string, sum *engine.Summary) string {
	switch {
	case sum.Status == engine.EndHeld && sum.Exhausted:
		return fmt.Sprintf("`rigor report --state %s` reports what has run; `rigor close --state %s --reason \"...\"` closes the campaign after review", state, state)
	case sum.Status == engine.EndHeld:
		return fmt.Sprintf("`rigor plan apply %s --state %s` continues the campaign; `rigor report --state %s` reports what has run", campaign, state, state)
	case sum.Status == engine.EndRestoreFailed:
		return fmt.Sprintf("`rigor plan apply %s --state %s`, after the checks by hand above, retries the restore", campaign, state)
	}
	return fmt.Sprintf("`rigor report --state %s` writes the report (report.html, report.md, summary.json and charts) to %s", state, filepath.Join(state, "report"))
}

func countsText(c map[engine.Status]int) string {
	if len(c) == 0 {
		return ""
	}
	var parts []string
	for _, s := range []engine.Status{engine.StatusSucceeded, engine.StatusFailed, engine.StatusInterrupted, engine.StatusDeferred, engine.StatusBlocked, engine.StatusSkipped} {
		if c[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[s], s))
		}
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// interruptState is what the events have said so far: whether the apply has
// journaled its start (from then on an interrupt is journaled too), whether an
// always-step has started, and whether an outage is open.
type interruptState struct {
	journaled, restoring, outageOpen func() bool
}

// interruptContext implements the two-stage interrupt of apply: the first
// SIGINT/SIGTERM cancels the running step and sends the engine to restore; the second
// says what a kill would leave behind; the third exits at once (signals.go).
// Before the apply has journaled its start (a freeze hashing large inputs, a
// resume checking the state) no event has said whether the journal holds an open
// outage, so nothing is said of one, and the interrupt leaves nothing to settle.
func interruptContext(g *globals, s interruptState) (context.Context, func()) {
	journaled, restoring, outageOpen := s.journaled, s.restoring, s.outageOpen
	return watchInterrupts(g, interruptPlan{
		// The engine says what happens next (running steps cancelled, always-steps
		// run); this line says only what another signal does.
		first: "interrupt again for what a kill would leave behind",
		second: func() string {
			switch {
			case outageOpen() && restoring():
				return "restore is running. A third interrupt exits now and leaves the outage open in the journal; the next `rigor plan apply` on this state restores first."
			case outageOpen():
				return "any running step is being cancelled; restore runs next. A third interrupt exits now and leaves the outage open in the journal; the next `rigor plan apply` on this state restores first."
			case !journaled():
				return "no step has started yet: rigor is freezing the plan or checking the state. A third interrupt exits now; the next `rigor plan apply` on this state goes on from there."
			case !restoring():
				return "any running step is being cancelled; the always-steps run next; no outage is open. A third interrupt exits now; the next `rigor plan apply` on this state runs the always-steps and holds."
			}
			return "the always-steps are running; no outage is open. A third interrupt exits now; the next `rigor plan apply` on this state settles what it leaves."
		},
		exit: func() string {
			switch {
			case outageOpen():
				return "exiting without finishing restore; run `rigor plan apply` on the same state to restore"
			case !journaled():
				return "exiting before any step started; run `rigor plan apply` on the same state to go on"
			}
			return "exiting before the always-steps finished; no outage is open; run `rigor plan apply` on the same state to settle them"
		},
	})
}

// observer prints one line per step start and end to stderr, with the outage clock
// while an outage is open, and shows live step progress through a progressView: a bar
// per running block on a terminal, a line every 10 s otherwise.
func observer(g *globals, view progressView) func(engine.Event) {
	var (
		mu     sync.Mutex
		outage engine.OutageView // the latest clock an event carried
		seen   time.Time
	)
	clock := func() engine.OutageView {
		mu.Lock()
		defer mu.Unlock()
		o := outage
		if o.Open {
			o.Elapsed += time.Since(seen)
		}
		return o
	}
	return func(e engine.Event) {
		if e.Kind != "progress" {
			mu.Lock()
			outage, seen = e.Outage, time.Now()
			mu.Unlock()
		}
		l := view.logger()
		switch e.Kind {
		case "step_start":
			ev := l.Info().Str("step", e.Addr).Int("attempt", e.Attempt)
			if e.Outage.Open {
				ev = ev.Str("outage", outageText(e.Outage))
			}
			ev.Msg("start")
		case "step_end":
			view.finish(e.Addr, e.Status == engine.StatusSucceeded)
			ev := l.Info()
			if e.Status != engine.StatusSucceeded {
				ev = l.Warn()
			}
			ev = ev.Str("step", e.Addr).Str("status", string(e.Status))
			if c := classField(g, e); c != "" {
				ev = ev.Str("class", c)
			}
			if e.Duration > 0 {
				ev = ev.Str("took", shortDuration(e.Duration))
			}
			if e.Outage.Open {
				ev = ev.Str("outage", outageText(e.Outage))
			}
			msg := "end"
			if e.Message != "" {
				msg = firstLine(e.Message)
			}
			ev.Msg(msg)
		case "outage", "note", "alert":
			ev := l.Warn()
			if e.Kind == "alert" {
				ev = l.Error()
			}
			if e.Outage.Open {
				ev = ev.Str("outage", outageText(e.Outage))
			}
			ev.Msg(e.Message)
		case "progress":
			view.update(e.Addr, e.Progress, clock())
		}
	}
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
