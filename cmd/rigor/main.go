package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
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

// Exit codes.
const (
	exitOK      = 0
	exitError1  = 1
	exitStopped = 3 // the campaign ran but stopped, was deferred or interrupted
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
	err := root.Execute()
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(stderr, "Error:", ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "Error:", err)
	return exitError1
}

func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:           "rigor",
		Short:         "Frozen, gated, journaled measurement campaigns for LLM serving stacks",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			return g.setupLog()
		},
	}
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "console", "log format on stderr: console or json")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &exitError{code: 2, msg: fmt.Sprintf("%v (see `%s --help`)", err, cmd.CommandPath())}
	})
	root.AddCommand(newPlanCmd(g), newStatusCmd(g), newVerifyCmd(g), newSimCmd(g))
	for _, add := range extraCommands {
		root.AddCommand(add(g))
	}
	return root
}

// extraCommands lets each command file register itself from init, so commands can
// be added without touching this file.
var extraCommands []func(*globals) *cobra.Command

func (g *globals) setupLog() error {
	lvl, err := zerolog.ParseLevel(g.logLevel)
	if err != nil || g.logLevel == "" {
		return &exitError{code: 2, msg: fmt.Sprintf("invalid --log-level %q: use debug, info, warn or error", g.logLevel)}
	}
	switch g.logFormat {
	case "json":
		g.log = zerolog.New(g.stderr).Level(lvl).With().Timestamp().Logger()
	case "console":
		w := zerolog.ConsoleWriter{Out: g.stderr, TimeFormat: time.TimeOnly, NoColor: !isTerminal(g.stderr)}
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
