package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/spf13/cobra"
)

func newDiffCmd(g *globals) *cobra.Command {
	var a planArgs
	var state, reason string
	var record, detailed, postHoc bool
	cmd := &cobra.Command{
		Use:   "diff CAMPAIGN --state DIR",
		Short: "Show how a campaign file differs from the frozen plan; --record an amendment",
		Example: `  rigor plan diff examples/quickstart/campaign.hcl --state runs/q1
  rigor plan diff campaign.hcl --state runs/w1 --detailed-exitcode || echo "exit $?: changed or error"
  rigor plan diff campaign.hcl --state runs/w1 --record --reason "extended lanes deferred after the C4 failure"
  rigor plan diff campaign.hcl --state runs/w1 --record --post-hoc --reason "review asked for the C1 comparison too"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: 2, msg: "--state is required: the state directory whose frozen plan to compare with"}
			}
			if record && strings.TrimSpace(reason) == "" {
				return &exitError{code: 2, msg: "--record needs --reason \"...\": an amendment says why it was made"}
			}
			if reason != "" && !record {
				return &exitError{code: 2, msg: "--reason is the reason of an amendment being recorded: use it with --record"}
			}
			if detailed && record {
				return &exitError{code: 2, msg: "--detailed-exitcode says whether the file differs; --record records the difference: use one or the other"}
			}
			if postHoc && !record {
				return &exitError{code: 2, msg: "--post-hoc labels an amendment as it is recorded: use it with --record --reason \"...\""}
			}
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			prop, err := engine.DiffAgainstState(state, p)
			if err != nil {
				return &exitError{code: exitError1, msg: err.Error()}
			}
			prop.Diff.Render(g.stdout)
			prop.Render(g.stdout)
			if !record {
				if detailed && !prop.Diff.Empty() {
					return errChanged
				}
				return nil
			}
			recordFn := engine.RecordAmendment
			if postHoc {
				recordFn = engine.RecordPostHocAmendment
			}
			am, err := recordFn(state, p, reason, nil)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			label := "prospective"
			if am.PostHoc {
				label = "POST-HOC, not pre-registered: every verdict it touches is labelled and cannot promote"
			}
			fmt.Fprintf(g.stdout, "recorded amendment %d (%s; plan sha256 %s): %s\n", am.Number, label, am.PlanSHA256, reason)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory")
	cmd.Flags().BoolVar(&record, "record", false, "append the difference as an amendment (only if no changed step has started, and no change shapes the analysis after a measured block it affects has started)")
	cmd.Flags().BoolVar(&postHoc, "post-hoc", false, "with --record: record an analysis-shaping change made after measured data exist, labelled post-hoc; its verdicts cannot promote")
	cmd.Flags().StringVar(&reason, "reason", "", "why the plan changes (required with --record)")
	cmd.Flags().BoolVar(&detailed, detailedFlag, false, "exit 0 when the file matches the effective plan, 2 when it differs, 1 on errors (as terraform plan -detailed-exitcode)")
	a.bind(cmd)
	return cmd
}

const detailedFlag = "detailed-exitcode"

// errChanged is --detailed-exitcode's "the file differs from the plan": exit 2,
// with the diff on stdout and nothing on stderr.
var errChanged = &exitError{code: exitUsage}

// detailedExitCode gives `plan diff --detailed-exitcode` Terraform's codes, where
// 2 means changes: every error, a bad flag or argument and a bad --log-level
// included, exits 1. Other commands keep code.
func detailedExitCode(cmd *cobra.Command, args []string, err error, code int) int {
	if code != exitUsage || errors.Is(err, errChanged) || cmd == nil || !wantsDetailed(cmd, args) {
		return code
	}
	return exitError1
}

// wantsDetailed reports whether the command line asked for --detailed-exitcode.
// A bad flag stops parsing, so a flag after it is found in the raw arguments; a
// value that is not a boolean counts as asking, since the flag was written.
func wantsDetailed(cmd *cobra.Command, args []string) bool {
	f := cmd.Flags().Lookup(detailedFlag)
	if f == nil {
		return false
	}
	if f.Changed {
		return f.Value.String() == "true"
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--"+detailedFlag {
			return true
		}
		if v, ok := strings.CutPrefix(a, "--"+detailedFlag+"="); ok {
			b, err := strconv.ParseBool(v)
			return err != nil || b
		}
	}
	return false
}
