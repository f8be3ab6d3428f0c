package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/rigor-bench/rigor/engine/atomicfile"
	"github.com/rigor-bench/rigor/plans"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newFmtCmd) }

func newFmtCmd(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use: "fmt [--check] PATH...",
		Long: `fmt rewrites campaign files in canonical HCL style. A PATH that is a directory
means every *.hcl file in it and below it (one with none is an error).`,
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
					// A directory means every *.hcl file under it, subdirectories included.
					var found []string
					err := filepath.WalkDir(a, func(path string, d fs.DirEntry, err error) error {
						if err == nil && !d.IsDir() && strings.HasSuffix(path, ".hcl") {
							found = append(found, path)
						}
						return err
					})
					if err != nil {
						return &exitError{code: 1, msg: err.Error()}
					}
					if len(found) == 0 {
						return &exitError{code: 1, msg: fmt.Sprintf("%s holds no *.hcl file, in it or below it", a)}
					}
					files = append(files, found...)
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
					// Replaced whole: a full disk must not leave half a campaign file.
					perm := os.FileMode(0o644)
					if st, err := os.Stat(f); err == nil {
						perm = st.Mode().Perm()
					}
					if err := atomicfile.Write(f, out, perm); err != nil {
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
