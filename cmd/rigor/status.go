package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/report"
	"github.com/spf13/cobra"
)

func newStatusCmd(g *globals) *cobra.Command {
	var state string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status --state DIR",
		Short: "Summarise a state directory: plan, outage, and the latest word on every step",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: 2, msg: "--state is required"}
			}
			st, err := engine.ReadStatus(state)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			// The decision is what `rigor report` would conclude now; evidence that
			// cannot be read leaves it out with the reason, never the status.
			brief, berr := report.BriefFromState(state)
			if asJSON {
				out := statusJSON{StateStatus: st, Decision: brief}
				if berr != nil {
					out.DecisionError = berr.Error()
				}
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(out)
			}
			red := func(s string) string {
				if isTerminal(g.stdout) {
					return "\x1b[1;31m" + s + "\x1b[0m"
				}
				return s
			}
			switch st.Lifecycle {
			case engine.LifecycleRestoreFailed:
				fmt.Fprintln(g.stdout, red("RESTORE FAILED: "+st.EndReason))
				fmt.Fprintln(g.stdout, red("the next `rigor plan apply` on this state retries the restore before anything else"))
			case engine.LifecycleHeld:
				fmt.Fprintf(g.stdout, "CAMPAIGN HELD (%s): %s\n", st.Cause, st.EndReason)
				switch {
				case st.Exhausted:
					fmt.Fprintf(g.stdout, "nothing is left that applying again could run; after review, `rigor close --state %s --reason \"...\"` closes the campaign\n", state)
				case st.Settled:
					fmt.Fprintf(g.stdout, "every step has run: applying again completes the campaign without running a step, or `rigor close --state %s --reason \"...\"`\n", state)
				default:
					fmt.Fprintf(g.stdout, "apply again to continue with what has not run, or `rigor close --state %s --reason \"...\"`\n", state)
				}
			case engine.LifecycleClosed:
				fmt.Fprintln(g.stdout, strings.TrimSpace(fmt.Sprintf("campaign closed (%s) %s", st.Ended, st.EndReason)))
			case engine.LifecycleRunning:
				switch {
				case !st.Crashed && len(st.Running) > 0:
					fmt.Fprintf(g.stdout, "RUNNING: %s holds the state; attempts under way: %v\n", holder(st.ApplyPID), st.Running)
				case !st.Crashed:
					fmt.Fprintf(g.stdout, "RUNNING: %s holds the state, between steps\n", holder(st.ApplyPID))
				case len(st.Running) > 0:
					fmt.Fprintln(g.stdout, red(fmt.Sprintf("CRASHED: the last apply died before it ended (no rigor process holds the state); attempts without an end record: %v; the next apply recovers them", st.Running)))
				default:
					fmt.Fprintln(g.stdout, red("CRASHED: the last apply died between steps (no rigor process holds the state); the next apply recovers it"))
				}
			}
			switch {
			case st.OutageOpen:
				fmt.Fprintln(g.stdout, red(fmt.Sprintf("OUTAGE OPEN (window %d) since %s (%s ago)", st.OutageWindow, st.OutageSince.Format(time.RFC3339), time.Since(*st.OutageSince).Truncate(time.Second))))
			default:
				fmt.Fprintln(g.stdout, "no outage open")
			}
			if berr != nil {
				fmt.Fprintf(g.stdout, "verdict: not computed: %v\n", berr)
			} else {
				fmt.Fprintln(g.stdout, brief.Text(st.Lifecycle == engine.LifecycleClosed))
			}
			fmt.Fprintf(g.stdout, "plan sha256 %s, %d amendment(s), %d journal records\n", st.PlanSHA256, st.Amendments, st.Records)
			fmt.Fprintf(g.stdout, "journal head %s\n", st.Head)
			if pw, err := report.PowerFromState(state); err == nil && pw != nil {
				fmt.Fprintln(g.stdout, pw.String())
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tSTATUS\tCLASS\tATTEMPTS\tMESSAGE")
			for _, s := range st.Steps {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", s.Addr, s.Status, s.Class, s.Attempts, truncate(s.Message, 80))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// statusJSON is status --json: the journal's summary with the decision beside it.
type statusJSON struct {
	*engine.StateStatus
	// Decision is the verdict in brief (report.Brief); null with DecisionError when
	// the evidence could not be read.
	Decision      *report.Brief `json:"decision"`
	DecisionError string        `json:"decision_error,omitempty"`
}

func truncate(s string, n int) string {
	s = firstLine(s)
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// holder names the rigor process holding a state directory.
func holder(pid int) string {
	if pid == 0 {
		return "a rigor process"
	}
	return fmt.Sprintf("rigor process %d", pid)
}
