package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every command's help ends with an example, and every flag shows a real type.
func TestEveryCommandHasAnExample(t *testing.T) {
	g := &globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || strings.HasPrefix(c.CommandPath(), "rigor completion") {
			return
		}
		if c.Example == "" {
			t.Errorf("%s has no example (add one to commandExamples)", c.CommandPath())
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			// A backquoted word in a usage replaces the type in --help: fine for a
			// placeholder such as DIR, wrong for a word of the sentence.
			if name, _ := pflag.UnquoteUsage(f); strings.Contains(f.Usage, "`") && name != strings.ToUpper(name) {
				t.Errorf("%s --%s: a backquoted word in its usage replaces the type with %q in --help", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRoot(g))
	for path := range commandExamples {
		found := false
		var find func(c *cobra.Command)
		find = func(c *cobra.Command) {
			if c.CommandPath() == path {
				found = true
			}
			for _, sub := range c.Commands() {
				find(sub)
			}
		}
		find(newRoot(g))
		if !found {
			t.Errorf("commandExamples names %q, which is no command", path)
		}
	}
}

// Every example runs as written as far as the CLI can tell without running it: the
// command exists and every flag it passes parses.
func TestExamplesParse(t *testing.T) {
	for path, ex := range commandExamples {
		for _, line := range strings.Split(ex, "\n") {
			line = strings.TrimSpace(line)
			for _, cut := range []string{"#", "|", "&&", "&", "||"} {
				if i := strings.Index(line, cut); i >= 0 {
					line = line[:i]
				}
			}
			args := strings.Fields(line)
			if len(args) == 0 || args[0] != "rigor" {
				continue
			}
			root := newRoot(&globals{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
			cmd, rest, err := root.Find(args[1:])
			if err != nil || cmd == root && len(args) > 1 {
				t.Errorf("%s: example %q names no command: %v", path, line, err)
				continue
			}
			if err := cmd.ParseFlags(rest); err != nil {
				t.Errorf("%s: example %q: %v", path, line, err)
			}
		}
	}
}
