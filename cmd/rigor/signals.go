package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/rigor-bench/rigor/steps"
)

// interruptPlan is what each SIGINT/SIGTERM/SIGHUP does: the first cancels the context and
// logs first; the second logs second (when set) and the next one exits 130 after
// logging exit. second and exit are worked out when the signal comes, so they can
// say what is true then (whether an outage is open).
type interruptPlan struct {
	first        string
	second, exit func() string
}

// exitInterrupted is the exit status of a command stopped by a signal (128 + SIGINT),
// as shells report it.
const exitInterrupted = 130

// watchInterrupts returns a context the first interrupt cancels (its cause names the
// signal) and a function that stops watching.
func watchInterrupts(g *globals, p interruptPlan) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	ch := make(chan os.Signal, 3)
	// SIGHUP is the terminal going away (a dropped ssh session): rigor must still
	// restore, so it is an interrupt like the others. The output that went to that
	// terminal may be a pipe that closes with it: a write to it must fail, not
	// kill rigor with SIGPIPE before the restore.
	// Under nohup SIGHUP is ignored, and stays so: the operator asked for that.
	// SIGPIPE is caught, not ignored, so that the commands steps start inherit its
	// default (an ignored signal stays ignored in children, and `producer | head`
	// would then never end).
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	signal.Notify(ch, sigs...)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	done := make(chan struct{})
	go func() {
		n := 0
		for {
			select {
			case s := <-ch:
				n++
				switch {
				case n == 1:
					g.log.Warn().Msg(signalName(s) + " received: " + p.first)
					cancel(errors.New(signalName(s)))
				case n == 2 && p.second != nil:
					g.log.Warn().Msg(p.second())
				default:
					// The commands the running steps started go with rigor: a
					// restore cut short must not run on beside the next apply's.
					steps.KillChildren()
					g.log.Error().Msg(p.exit())
					os.Exit(exitInterrupted)
				}
			case <-done:
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(ch); signal.Stop(pipe); close(done); cancel(nil) }
}

// benchInterrupts is the interrupt of commands that only measure (bench,
// calibrate): nothing was taken out of service, so there is nothing to restore.
var benchInterrupts = interruptPlan{
	first: "stopping; requests in flight are cancelled and every record taken so far is written. Interrupt again to exit at once.",
	exit:  func() string { return "exiting at once; the records of requests in flight are lost" },
}
