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
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/engine/atomicfile"
	"github.com/rigor-bench/rigor/plans"
	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newFmtCmd) }

func newFmtCmd(g *globals) *cobra.Command {
	var check bool
	cmd := &cobra.Command{
		Use: "fmt [--check] PATH...",
		Long: `fmt rewrites campaign files in canonical HCL style, each replaced whole (a
symlink's target is). A PATH that is a directory means every *.hcl file in it and
below it (one with none is an error), except in rigor state directories: their
frozen plans are evidence, and a file in one is refused.`,
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
						if err == nil && d.IsDir() && isStateDir(path) {
							return fs.SkipDir // a frozen plan is evidence
						}
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
			// A symlink is checked, and formatted, where it leads.
			targets := make([]string, len(files))
			for i, f := range files {
				t, err := filepath.EvalSymlinks(f)
				if err != nil {
					return &exitError{code: 1, msg: err.Error()}
				}
				if dir := stateDirOf(t); dir != "" {
					return &exitError{code: 1, msg: fmt.Sprintf("%s is in the rigor state directory %s: its files are evidence, and formatting them would fail rigor verify", f, dir)}
				}
				targets[i] = t
			}
			unformatted := 0
			for i, f := range files {
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
					if st, err := os.Stat(targets[i]); err == nil {
						perm = st.Mode().Perm()
					}
					if err := atomicfile.Write(targets[i], out, perm); err != nil {
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

// isStateDir says whether dir is a rigor state directory (engine.CheckState).
func isStateDir(dir string) bool { return engine.CheckState(dir) == nil }

// stateDirOf is the state directory that holds path, or "" when none does.
func stateDirOf(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if isStateDir(dir) {
			rel, err := filepath.Rel(filepath.Dir(abs), dir)
			if err != nil {
				return dir
			}
			return filepath.Join(filepath.Dir(path), rel)
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}
