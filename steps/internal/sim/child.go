package sim

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"
)

// ChildEnv names the environment variable that makes a binary serve a container:
// its value is the container's directory. The runtime starts a container's server by
// running its own executable again with only this variable set, so any binary that
// links this package (rigor itself, and every test binary) can be a server.
const ChildEnv = "RIGOR_SIM_CONTAINER"

// Before any main or TestMain: a process started as a container's server serves and
// exits, and never runs the program it was built as.
func init() {
	if dir := os.Getenv(ChildEnv); dir != "" {
		os.Exit(ServeContainer(dir))
	}
}

// ServeContainer serves the container whose directory is dir until SIGTERM or SIGINT,
// and returns the process exit code. SIGHUP re-reads the container's faults. It writes
// server.json once it listens (pid, start time, incarnation, address) and
// exit-<pid>.json when it ends.
func ServeContainer(dir string) int {
	pid := os.Getpid()
	// Signals are caught before anything else, so that a stop or a fault reload sent
	// as soon as server.json appears is never the default action (termination).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	fail := func(err error) int {
		fmt.Fprintf(os.Stderr, "rigor sim: %v\n", err)
		writeExitOnce(dir, exitState{PID: pid, ExitCode: 1, FinishedAt: time.Now().UTC(), Error: err.Error(), PortInUse: errors.Is(err, ErrPortInUse)})
		return 1
	}
	rec, err := readRecord(dir)
	if err != nil {
		return fail(fmt.Errorf("container directory %s: %w", dir, err))
	}
	cfg, err := rec.config()
	if err != nil {
		return fail(fmt.Errorf("container %s: %w", rec.Name, err))
	}
	ticks, _, _ := processStat(pid)
	started := time.Now().UTC().Round(0)
	cfg.Incarnation = incarnationOf(rec.ID, started, pid)
	rn, err := Listen(rec.Listen, cfg)
	if err != nil {
		return fail(err)
	}
	st := serverState{PID: pid, StartTicks: ticks, StartedAt: started, Incarnation: cfg.Incarnation, Addr: rn.Addr()}
	if err := writeFileAtomic(filepath.Join(dir, serverFile), st); err != nil {
		_ = rn.Close()
		return fail(err)
	}
	fmt.Fprintf(os.Stderr, "%s serving container %s (%s) at %s, pid %d, incarnation %s\n",
		started.Format(time.RFC3339Nano), rec.Name, rec.Image, rn.URL(), pid, cfg.Incarnation)
	for s := range sigs {
		if s == syscall.SIGHUP {
			r, err := readRecord(dir)
			if err == nil {
				err = rn.Server().SetFaults(r.Config.Faults)
			}
			if err == nil {
				err = writeFileAtomic(filepath.Join(dir, ackFile), r.FaultsGeneration)
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "rigor sim: reload faults: %v\n", err)
			}
			continue
		}
		fmt.Fprintf(os.Stderr, "%s stopping on %s\n", time.Now().UTC().Format(time.RFC3339Nano), s)
		code := 0
		if err := rn.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "rigor sim: close: %v\n", err)
			code = 1
		}
		writeExitOnce(dir, exitState{PID: pid, ExitCode: code, FinishedAt: time.Now().UTC()})
		return code
	}
	return 0
}
