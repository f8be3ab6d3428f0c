package main

import (
	"errors"
	"fmt"

	"github.com/rigor-bench/rigor/engine"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newCloseCmd) }

func newCloseCmd(g *globals) *cobra.Command {
	var state, reason string
	cmd := &cobra.Command{
		Use:     "close --state DIR --reason TEXT",
		Short:   "Close a held campaign for good, with the reason recorded in its journal",
		Example: `  rigor close --state runs/wave1 --reason "C4 failed twice; reviewed, no continuation"`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if state == "" {
				return &exitError{code: exitUsage, msg: "--state is required: the campaign's state directory"}
			}
			if reason == "" {
				return &exitError{code: exitUsage, msg: "--reason is required: why the campaign is closed, recorded in its journal"}
			}
			rec, err := engine.Close(state, reason, nil)
			if err != nil {
				if errors.Is(err, engine.ErrCloseRefused) {
					return &exitError{code: exitError1, msg: err.Error()}
				}
				return err
			}
			fmt.Fprintf(g.stdout, "campaign closed at %s: %s\n", rec.Time.Format("2006-01-02T15:04:05Z07:00"), reason)
			return nil
		},
	}
	cmd.Flags().StringVar(&state, "state", "", "state directory of the campaign")
	cmd.Flags().StringVar(&reason, "reason", "", "why the campaign is closed (recorded in the journal)")
	return cmd
}
