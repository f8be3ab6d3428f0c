package main

import (
	"bytes"
	"fmt"
	"io"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/spf13/cobra"
)

// planArgs are the flags shared by every command that loads a campaign.
type planArgs struct {
	vars     []string
	varFiles []string
}

func (a *planArgs) bind(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&a.vars, "var", nil, "set a variable: --var NAME=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&a.varFiles, "var-file", nil, "read variables from an HCL file (repeatable)")
}

// load parses and evaluates a campaign, printing diagnostics with source snippets.
func (a *planArgs) load(g *globals, path string) (*plans.Plan, error) {
	p, parser, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types(), Vars: a.vars, VarFiles: a.varFiles})
	if p != nil {
		g.redact.Add(p.Secrets()...)
	}
	if len(diags) > 0 {
		writeDiags(g.stderr, parser.Files(), diags)
	}
	if diags.HasErrors() {
		n := 0
		for _, d := range diags {
			if d.Severity == hcl.DiagError {
				n++
			}
		}
		return nil, &exitError{code: 1, msg: fmt.Sprintf("%s: %d error(s)", path, n)}
	}
	return p, nil
}

// maxSnippetLine is the longest source line a diagnostic shows: a generated or
// minified file can hold a line of megabytes, which would bury the message.
const maxSnippetLine = 400

func writeDiags(w io.Writer, files map[string]*hcl.File, diags hcl.Diagnostics) {
	color := isTerminal(w)
	dw := hcl.NewDiagnosticTextWriter(w, files, 100, color)
	bare := hcl.NewDiagnosticTextWriter(w, nil, 100, color)
	for _, d := range diags {
		// A file:line:col prefix first, so editors and grep can jump to it.
		if d.Subject != nil {
			fmt.Fprintf(w, "%s:%d:%d: %s\n", d.Subject.Filename, d.Subject.Start.Line, d.Subject.Start.Column, d.Summary)
			if n := lineLength(files, *d.Subject); n > maxSnippetLine {
				_ = bare.WriteDiagnostic(d)
				fmt.Fprintf(w, "  (line %d is %d bytes long: its text is not shown)\n\n", d.Subject.Start.Line, n)
				continue
			}
		}
		_ = dw.WriteDiagnostic(d)
	}
}

// lineLength is the length in bytes of the source line r starts on, 0 when the
// file is not at hand.
func lineLength(files map[string]*hcl.File, r hcl.Range) int {
	f := files[r.Filename]
	if f == nil || r.Start.Byte > len(f.Bytes) {
		return 0
	}
	start := bytes.LastIndexByte(f.Bytes[:r.Start.Byte], '\n') + 1
	end := bytes.IndexByte(f.Bytes[r.Start.Byte:], '\n')
	if end < 0 {
		return len(f.Bytes) - start
	}
	return r.Start.Byte + end - start
}

func newPlanCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "plan", Short: "Validate, show, graph, apply and amend campaign plans"}
	cmd.AddCommand(newValidateCmd(g), newShowCmd(g), newGraphCmd(g), newApplyCmd(g), newDiffCmd(g))
	return cmd
}

func newValidateCmd(g *globals) *cobra.Command {
	var a planArgs
	cmd := &cobra.Command{
		Use:   "validate CAMPAIGN",
		Short: "Parse and evaluate a campaign; report every problem at once",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := a.load(g, args[0])
			if err != nil {
				return err
			}
			sum, err := p.Hash()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "%s is valid: campaign %q, %d step instances, plan sha256 %s\n", args[0], p.Campaign.Name, len(p.Instances), sum)
			return nil
		},
	}
	a.bind(cmd)
	return cmd
}
