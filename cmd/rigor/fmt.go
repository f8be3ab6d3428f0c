package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rigor-bench/rigor/plans"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newFmtCmd) }

func newFmtCmd(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use:   "fmt [--check] PATH...",
		Short: "Rewrite campaign files in canonical HCL style (--check only reports)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var files []string
			for _, a := range args {
				st, err := os.Stat(a)
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				if st.IsDir() {
					m, _ := filepath.Glob(filepath.Join(a, "*.hcl"))
					files = append(files, m...)
				} else {
					files = append(files, a)
				}
			}
			unformatted := 0
			for _, f := range files {
				src, err := os.ReadFile(f)
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				// Refuse to format what does not parse: the diagnostics say why. The
				// nesting check comes first, as it does for plans.Load.
				if diags := plans.CheckNesting(src, f); diags.HasErrors() {
					writeDiags(g.stderr, map[string]*hcl.File{f: {Bytes: src}}, diags)
					return &exitError{code: 1, msg: f + " does not parse"}
				}
				if _, diags := hclsyntax.ParseConfig(src, f, hcl.InitialPos); diags.HasErrors() {
					writeDiags(g.stderr, nil, diags)
					return &exitError{code: 1, msg: f + " does not parse"}
				}
				out := hclwrite.Format(src)
				if bytes.Equal(out, src) {
					continue
				}
				unformatted++
				fmt.Fprintln(g.stdout, f)
				if !check {
					if err := os.WriteFile(f, out, 0o644); err != nil {
						return &exitError{code: 1, msg: err.Error()}
					}
				}
			}
			if check && unformatted > 0 {
				return &exitError{code: 3, msg: fmt.Sprintf("%d file(s) need `rigor fmt`", unformatted)}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&check, "check", false, "list files that are not formatted and exit 3, changing nothing")
	return cmd
}
