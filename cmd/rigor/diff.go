package main

import (
	"fmt"

	"github.com/rigor-bench/rigor/engine"
	"github.com/spf13/cobra"
)

func newDiffCmd(g *globals) *cobra.Command {
	var a planArgs
	var state, reason string
	var record, detailed bool
	cmd := &cobra.Command{
		Use:   "diff CAMPAIGN --state DIR",
		Short: "Show how a campaign file differs from the frozen plan; --record an amendment",
		Example: `  rigor plan diff examples/quickstart/campaign.hcl --state runs/q1
  rigor plan diff campaign.hcl --state runs/w1 --detailed-exitcode || echo "exit $?: changed or error"
  rigor plan diff campaign.hcl --state runs/w1 --record --reason "extended lanes deferred after the C4 failure"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: 2, msg: "--state is required: the state directory whose frozen plan to compare with"}
			}
			if record && reason == "" {
				return &exitError{code: 2, msg: "--record needs --reason \"...\": an amendment says why it was made"}
			}
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			d, err := engine.DiffAgainstState(state, p)
			if err != nil {
				return &exitError{code: exitError1, msg: err.Error()}
			}
			d.Render(g.stdout)
			if !record {
				if detailed && !d.Empty() {
					return &exitError{code: exitUsage} // Terraform's -detailed-exitcode: 2 means changes
				}
				return nil
			}
			am, err := engine.RecordAmendment(state, p, reason, nil)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			fmt.Fprintf(g.stdout, "recorded amendment %d (plan sha256 %s): %s\n", am.Number, am.PlanSHA256, reason)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.Flags().BoolVar(&record, "record", false, "append the difference as an amendment (only if no changed step has started)")
	cmd.Flags().StringVar(&reason, "reason", "", "why the plan changes (required with --record)")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 when the file matches the effective plan, 2 when it differs, 1 on errors (as terraform plan -detailed-exitcode)")
	a.bind(cmd)
	return cmd
}
