package main

import (
	"fmt"
	"github.com/rigor-bench/rigor/engine"
	"path/filepath"
	"time"

	"github.com/rigor-bench/rigor/steps/report"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newReportCmd) }

func newReportCmd(g *globals) *cobra.Command {
	var opts report.Options
	var noCharts bool
	cmd := &cobra.Command{
		Use:   "report --state DIR [--format md|html|both] [--out DIR]",
		Short: "Turn a state directory's evidence into summary.json, report.md, report.html and charts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if opts.State == "" {
				return &exitError{code: 2, msg: "--state is required"}
			}
			if opts.Format != "md" && opts.Format != "html" && opts.Format != "both" {
				return &exitError{code: 2, msg: fmt.Sprintf("invalid --format %q: use md, html or both", opts.Format)}
			}
			if err := engine.CheckState(opts.State); err != nil {
				return &exitError{code: exitError1, msg: err.Error()}
			}
			if opts.Out == "" {
				opts.Out = filepath.Join(opts.State, "report")
			}
			opts.Charts = !noCharts
			start := time.Now()
			files, err := report.Generate(opts)
			if err != nil {
				return &exitError{code: 1, msg: err.Error()}
			}
			g.log.Info().Int("files", len(files)).Str("took", shortDuration(time.Since(start))).Msg("report written")
			for _, f := range files {
				fmt.Fprintln(g.stdout, filepath.Join(opts.Out, f))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opts.State, "state", "", "state directory")
	cmd.Flags().StringVar(&opts.Format, "format", "both", "documents to write: md, html or both (summary.json is always written)")
	cmd.Flags().StringVar(&opts.Out, "out", "", "output directory (default <state>/report)")
	cmd.Flags().BoolVar(&noCharts, "no-charts", false, "skip the PNG/SVG charts")
	return cmd
}
