package main

import (
	"encoding/json"
	"fmt"
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
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			fmt.Fprintf(g.stdout, "plan sha256 %s, %d amendment(s), %d journal records\n", st.PlanSHA256, st.Amendments, st.Records)
			switch {
			case st.OutageOpen:
				fmt.Fprintf(g.stdout, "OUTAGE OPEN since %s (%s ago)\n", st.OutageSince.Format(time.RFC3339), time.Since(*st.OutageSince).Truncate(time.Second))
			default:
				fmt.Fprintln(g.stdout, "no outage open")
			}
			if st.Ended != "" {
				fmt.Fprintf(g.stdout, "campaign ended: %s %s\n", st.Ended, st.EndReason)
			} else if len(st.Running) > 0 {
				fmt.Fprintf(g.stdout, "attempts without an end record (running, or the apply died): %v\n", st.Running)
			}
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

func truncate(s string, n int) string {
	s = firstLine(s)
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

func newVerifyCmd(g *globals) *cobra.Command {
	var state string
	cmd := &cobra.Command{
		Use:   "verify --state DIR",
		Short: "Re-hash every artefact, walk the journal's hash chain, report every discrepancy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: 2, msg: "--state is required"}
			}
			problems, err := engine.Verify(state)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			if len(problems) == 0 {
				st, _ := engine.ReadStatus(state)
				n := 0
				if st != nil {
					n = st.Records
				}
				fmt.Fprintf(g.stdout, "verified: %s — journal chain intact (%d records), every artefact matches its recorded sha256\n", state, n)
				return nil
			}
			for _, p := range problems {
				fmt.Fprintf(g.stdout, "%s: %s\n", p.Path, p.Problem)
			}
			return &exitError{code: 1, msg: fmt.Sprintf("%d problem(s) in %s", len(problems), state)}
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	return cmd
}
