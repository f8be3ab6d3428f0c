package main

import (
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestREADMECommandsExist: every command and flag the README's CLI reference names
// is one rigor has, so the reference cannot promise a flag that is not there.
func TestREADMECommandsExist(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, ref, ok := strings.Cut(string(b), "## CLI reference\n\n```\n")
	ref, _, _ = strings.Cut(ref, "```")
	if !ok || ref == "" {
		t.Fatal("README has no CLI reference block")
	}
	root := newRoot(&globals{stdout: io.Discard, stderr: io.Discard})
	flag := regexp.MustCompile(`--[a-z][a-z0-9-]*`)
	rows, flags := 0, 0
	var path []string
	for _, line := range strings.Split(ref, "\n") {
		var usage string
		switch {
		case strings.HasPrefix(line, "rigor "):
			// The command's words, padded to a column; then its usage, up to the
			// description three or more spaces on.
			path = nil
			rest := strings.TrimPrefix(line, "rigor ")
			for _, w := range strings.Fields(rest) {
				if !regexp.MustCompile(`^[a-z]+$`).MatchString(w) {
					break
				}
				path = append(path, w)
				rest = strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(rest, " "), w), " ")
			}
			usage, _, _ = strings.Cut(rest, "   ")
			rows++
		case strings.HasPrefix(strings.TrimSpace(line), "[--") && path != nil:
			// A usage continued on the next line, before the description column.
			usage = strings.TrimSpace(line[:min(len(line), 55)])
		default:
			continue
		}
		cmd, rest, err := root.Find(path)
		if err != nil || len(rest) > 0 || cmd == root {
			t.Errorf("README names `rigor %s`, which is no command (%v)", strings.Join(path, " "), err)
			continue
		}
		for _, f := range flag.FindAllString(usage, -1) {
			flags++
			if cmd.Flags().Lookup(f[2:]) == nil && cmd.InheritedFlags().Lookup(f[2:]) == nil {
				t.Errorf("README: `rigor %s` has no flag %s", strings.Join(path, " "), f)
			}
		}
	}
	if rows < 15 || flags < 40 {
		t.Errorf("read %d command rows and %d flags from the README's CLI reference; the parse is broken", rows, flags)
	}
}

// TestEveryCommandExits2OnABadFlag: cmd/rigor/doc.go's contract, for every
// command: an unknown flag exits 2 naming it, before anything runs; and a required
// flag left out exits 2 too.
func TestEveryCommandExits2OnABadFlag(t *testing.T) {
	root := newRoot(&globals{stdout: io.Discard, stderr: io.Discard})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		if c.Runnable() && c != root {
			paths = append(paths, path)
		}
		for _, sub := range c.Commands() {
			if sub.Name() != "help" && sub.Name() != "completion" {
				walk(sub, append(slices.Clone(path), sub.Name()))
			}
		}
	}
	walk(root, nil)
	if len(paths) < 20 {
		t.Fatalf("found %d commands; the walk is broken", len(paths))
	}
	for _, p := range paths {
		var stderr strings.Builder
		if code := run(append(slices.Clone(p), "--no-such-flag"), io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--no-such-flag") {
			t.Errorf("rigor %s --no-such-flag: exit %d, stderr %q; want 2 naming the flag", strings.Join(p, " "), code, stderr.String())
		}
	}
	var stderr strings.Builder
	if code := run([]string{"agent"}, io.Discard, &stderr); code != exitUsage || !strings.Contains(stderr.String(), "--listen is required") {
		t.Errorf("rigor agent without --listen: exit %d, stderr %q; want 2", code, stderr.String())
	}
}
