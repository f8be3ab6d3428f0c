package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
)

// exitError carries a process exit code through cobra.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// Exit codes, documented in the README ("Campaign lifecycle and exit codes") and
// tested in testdata/script/lifecycle.txtar and cli.txtar. Usage (2) covers a bad
// flag or argument for every command but `plan diff --detailed-exitcode`, where 2
// means changes and every error is 1 (diff.go: detailedExitCode).
const (
	exitOK            = 0
	exitError1        = 1
	exitUsage         = 2
	exitHeld          = 3 // stopped, deferred or interrupted; the incumbent was restored; apply again to continue
	exitRestoreFailed = 4 // an always-step (restore) failed: the outage is open
	exitOverrun       = 5 // the incumbent was restored, but the outage outlasted its budget
	exitClosed        = 6 // apply on a closed campaign: nothing ran
)

type globals struct {
	logFormat string
	logLevel  string
	stdout    io.Writer
	// stderr redacts the secrets in redact from everything written to it: logs,
	// progress, diagnostics and errors.
	stderr io.Writer
	redact *engine.Redactor
	log    zerolog.Logger
}

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) (code int) {
	// A bug must not reach the person at the terminal as a Go panic: say what
	// happened, where the evidence is safe, and how to report it.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(stderr, "Error: internal error in rigor: %v\nThe journal is append-only and fsynced, so recorded evidence is intact; `rigor status --state DIR` shows where the run stopped, and the next `rigor plan apply` on that state restores first if an outage is open.\n%s", p, debug.Stack())
			code = exitError1
		}
	}()
	// The sensitive variable values of a campaign are added to the redactor once
	// it is loaded (planArgs.load).
	redact := engine.NewRedactor()
	g := &globals{stdout: stdout, stderr: redact.Writer(stderr), redact: redact}
	stderr = g.stderr
	root := newRoot(g)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	code, msg := exitError1, err.Error()
	var ee *exitError
	if errors.As(err, &ee) {
		code, msg = ee.code, ee.msg
	} else if strings.HasPrefix(msg, "unknown command") {
		code = exitUsage
	}
	if msg != "" {
		fmt.Fprintln(stderr, "Error:", msg)
	}
	return detailedExitCode(cmd, args, err, code)
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "rigor",
		Short:         "Frozen, gated, journaled measurement campaigns for LLM serving stacks",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.setupLog()
		},
	}
	root.SetVersionTemplate("rigor {{.Version}}\n")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: exitUsage, msg: fmt.Sprintf("%v (see `%s --help`)", err, cmd.CommandPath())}
	})
	root.AddCommand(newPlanCmd(g), newStatusCmd(g), newVerifyCmd(g), newSimCmd(g))
	for _, add := range extraCommands {
		root.AddCommand(add(g))
	}
	refuseUnknownSubcommands(root)
	usageArgs(root)
	addExamples(root)
	return root
}

// refuseUnknownSubcommands makes every command that only groups others fail on an
// unknown subcommand, with cobra's "did you mean", instead of printing help and
// exiting 0 (`rigor plan aply`).
func refuseUnknownSubcommands(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		refuseUnknownSubcommands(c)
	}
	if !cmd.HasSubCommands() || cmd.Runnable() {
		return
	}
	cmd.Args = cobra.ArbitraryArgs
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		msg := fmt.Sprintf("unknown command %q for %q", args[0], c.CommandPath())
		c.SuggestionsMinimumDistance = 2
		if s := c.SuggestionsFor(args[0]); len(s) > 0 {
			msg += fmt.Sprintf("; did you mean %q?", s[0])
		}
		return &exitError{code: exitUsage, msg: msg + fmt.Sprintf(" (see `%s --help`)", c.CommandPath())}
	}
}

// usageArgs makes a missing or extra argument a usage error (exit 2) that points
// at the command's help, as a bad flag is; cobra returns it as a plain error.
func usageArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		usageArgs(c)
	}
	check := cmd.Args
	if check == nil {
		return
	}
	cmd.Args = func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("%v (see `%s --help`)", err, c.CommandPath())}
		}
		return nil
	}
}

// extraCommands lets each command file register itself from init, so commands can
// be added without touching this file.
var extraCommands []func(*globals) *cobra.Command

func (g *globals) setupLog() error {
	lvl, err := zerolog.ParseLevel(g.logLevel)
	if err != nil || !slices.Contains([]string{"debug", "info", "warn", "error"}, g.logLevel) {
		return &exitError{code: 2, msg: fmt.Sprintf("invalid --log-level %q: use debug, info, warn or error", g.logLevel)}
	}
	switch g.logFormat {
	case "json":
		// Millisecond timestamps: steps of a block are milliseconds apart.
		zerolog.TimeFieldFormat = "2006-01-02T15:04:05.000Z07:00"
		g.log = zerolog.New(g.stderr).Level(lvl).With().Timestamp().Logger()
	case "console":
		w := zerolog.ConsoleWriter{Out: g.stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(g.stderr),
			// A step address prints as it is written, block.primary["c1"], so it can
			// be pasted back into a plan: the writer quotes any value holding a
			// quote, and only values with spaces need that. A JSON field (RawJSON)
			// comes as its encoding's bytes, printed as text as zerolog's own
			// formatter does.
			FormatFieldValue: func(v any) string {
				s := fmt.Sprintf("%s", v)
				if u, err := strconv.Unquote(s); err == nil && !strings.ContainsAny(u, " \t\n") {
					return u
				}
				return s
			}}
		g.log = zerolog.New(w).Level(lvl).With().Timestamp().Logger()
	default:
		return &exitError{code: 2, msg: fmt.Sprintf("invalid --log-format %q: use console or json", g.logFormat)}
	}
	return nil
}

func isTerminal(w io.Writer) bool {
	if u, ok := w.(interface{ Unwrap() io.Writer }); ok {
		w = u.Unwrap()
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
