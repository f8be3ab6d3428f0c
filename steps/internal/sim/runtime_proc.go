package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rigor-bench/rigor/engine/procgroup"
)

// The process side of the runtime: starting a container's server as a process of its
// own, signalling it, and telling whether it still runs.

// children maps the pid of every server this process started to a channel closed once
// it has been reaped: whoever kills a server it started waits for the reaper, so the
// exit code recorded is the one the kernel reported.
var children sync.Map // int -> chan struct{}

func exitPath(dir string, pid int) string {
	return filepath.Join(dir, "exit-"+strconv.Itoa(pid)+".json")
}

// spawn starts rec's server process and waits until it listens. The process is a
// re-execution of this very binary with ChildEnv set (see child.go), in a session of
// its own and with a minimal environment.
func (h *Host) spawn(rec *record, restart bool) error {
	dir := h.path(rec.Name)
	if err := stopUnrecorded(rec, dir); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "exit-*.json"))
	for _, f := range append(old, filepath.Join(dir, serverFile), filepath.Join(dir, ackFile)) {
		_ = os.Remove(f)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("sim: start container %q: cannot find this program to run its server: %w", rec.Name, err)
	}
	logf, err := os.OpenFile(filepath.Join(dir, logFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sim: start container %q: %w", rec.Name, err)
	}
	// The arguments are what `ps` shows and what a person could run by hand; the
	// environment variable is what makes any binary linking this package serve.
	cmd := exec.Command(exe, "sim", "serve", "--container", dir)
	cmd.Env = []string{ChildEnv + "=" + dir}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("sim: start container %q: %w", rec.Name, err)
	}
	pid := cmd.Process.Pid
	reaped := make(chan struct{})
	children.Store(pid, reaped)
	go func() {
		_ = cmd.Wait()
		writeExitOnce(dir, exitState{PID: pid, ExitCode: exitCodeOf(cmd.ProcessState), FinishedAt: time.Now().UTC()})
		children.Delete(pid)
		close(reaped)
	}()
	// The pid is recorded before anything else can go wrong, so that whatever happens
	// next (this process dies, the server fails), the record names the process.
	ticks, _, _ := processStat(pid)
	rec.PID, rec.StartTicks, rec.OOMKilled = pid, ticks, false
	if restart {
		rec.RestartCount++
	}
	if err := h.write(rec); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		return err
	}
	deadline := time.Now().Add(h.StartTimeout)
	for {
		if st, err := readServer(dir); err == nil && st.PID == pid {
			rec.StartedAt, rec.Incarnation, rec.Endpoint = st.StartedAt, st.Incarnation, "http://"+st.Addr
			return h.write(rec)
		}
		select {
		case <-reaped:
			ex, _ := readExitOf(dir, pid)
			if ex.PortInUse {
				_, port, _ := net.SplitHostPort(rec.Listen)
				return fmt.Errorf("sim: start container %q: port %s (%s) is in use: %w", rec.Name, port, rec.Listen, ErrPortInUse)
			}
			return fmt.Errorf("sim: start container %q: its server exited with code %d before listening: %s (log: %s)",
				rec.Name, ex.ExitCode, orUnknown(ex.Error), filepath.Join(dir, logFile))
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			<-reaped
			return fmt.Errorf("sim: start container %q: its server did not listen within %s (log: %s)", rec.Name, h.StartTimeout, filepath.Join(dir, logFile))
		}
	}
}

// adoptOrphan finds a server of this container that a starter which died at the
// wrong moment (after the server began, before its pid was recorded) left running:
// the server wrote server.json once it listened, so the record learns its pid, start
// time and incarnation from there instead of a second server failing on the port.
func (h *Host) adoptOrphan(rec *record) bool {
	st, err := readServer(h.path(rec.Name))
	if err != nil || st.PID <= 0 || !processAlive(st.PID, st.StartTicks) {
		return false
	}
	rec.PID, rec.StartTicks, rec.OOMKilled = st.PID, st.StartTicks, false
	rec.StartedAt, rec.Incarnation, rec.Endpoint = st.StartedAt, st.Incarnation, "http://"+st.Addr
	return h.write(rec) == nil
}

// stopUnrecorded kills the servers of this container that no record names: a
// starter that died after starting one, before recording its pid, leaves it
// running, and when it had not yet written server.json, adoptOrphan could not
// take it. Left alone it holds the port, and the new server fails on it as if
// another program held it.
func stopUnrecorded(rec *record, dir string) error {
	for _, pid := range serverProcesses(dir) {
		if pid == rec.PID {
			continue
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		if !waitDead(&record{PID: pid}, 5*time.Second) {
			return fmt.Errorf("sim: start container %q: an earlier server of it (process %d) that no record names still runs 5s after SIGKILL", rec.Name, pid)
		}
		waitReaped(pid)
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "no reason recorded"
	}
	return s
}

// stop ends rec's server: SIGTERM, then SIGKILL after StopGrace.
func (h *Host) stop(rec *record) error {
	if !h.running(rec) {
		return nil
	}
	if err := signalServer(rec, syscall.SIGTERM); err != nil {
		return fmt.Errorf("sim: stop container %q: %w", rec.Name, err)
	}
	if waitDead(rec, h.StopGrace) {
		waitReaped(rec.PID)
		return nil
	}
	return h.kill(rec)
}

// kill ends rec's server with SIGKILL and records exit code 137.
func (h *Host) kill(rec *record) error {
	if err := signalServer(rec, syscall.SIGKILL); err != nil {
		return fmt.Errorf("sim: kill container %q: %w", rec.Name, err)
	}
	if !waitDead(rec, 5*time.Second) {
		return fmt.Errorf("sim: kill container %q: process %d still runs 5s after SIGKILL", rec.Name, rec.PID)
	}
	waitReaped(rec.PID)
	writeExitOnce(h.path(rec.Name), exitState{PID: rec.PID, ExitCode: 128 + int(syscall.SIGKILL), FinishedAt: time.Now().UTC()})
	return nil
}

// reloadFaults tells a running server to re-read its faults and waits until it says
// it applied them.
func (h *Host) reloadFaults(rec *record) error {
	if err := signalServer(rec, syscall.SIGHUP); err != nil {
		return fmt.Errorf("sim: container %q: %w", rec.Name, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var gen int
		if b, err := os.ReadFile(filepath.Join(h.path(rec.Name), ackFile)); err == nil && json.Unmarshal(b, &gen) == nil && gen >= rec.FaultsGeneration {
			return nil
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("sim: container %q: the server did not apply the new faults within 5s", rec.Name)
}

// signalServer signals rec's server, after checking that its pid still is that server.
func signalServer(rec *record, sig syscall.Signal) error {
	if !processAlive(rec.PID, rec.StartTicks) {
		return nil
	}
	if err := syscall.Kill(rec.PID, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal %s to process %d: %w", sig, rec.PID, err)
	}
	return nil
}

func waitDead(rec *record, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for processAlive(rec.PID, rec.StartTicks) {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// waitReaped waits (briefly) for this process's reaper of pid, if it started it.
func waitReaped(pid int) {
	if ch, ok := children.Load(pid); ok {
		select {
		case <-ch.(chan struct{}):
		case <-time.After(2 * time.Second):
		}
	}
}

// processStat is a process's start time and whether it is a zombie.
func processStat(pid int) (startTicks uint64, zombie bool, err error) { return procgroup.Stat(pid) }

// processAlive reports whether pid runs and is the process that started at ticks
// (0: not checked). A zombie is not alive: it will never answer again.
func processAlive(pid int, ticks uint64) bool {
	t, zombie, err := processStat(pid)
	if err != nil || zombie {
		return false
	}
	return ticks == 0 || t == 0 || t == ticks
}

func exitCodeOf(ps *os.ProcessState) int {
	if ps == nil {
		return ExitUnknown
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

func readServer(dir string) (serverState, error) {
	var st serverState
	b, err := os.ReadFile(filepath.Join(dir, serverFile))
	if err == nil {
		err = json.Unmarshal(b, &st)
	}
	return st, err
}

func readExitOf(dir string, pid int) (exitState, error) {
	var ex exitState
	b, err := os.ReadFile(exitPath(dir, pid))
	if err == nil {
		err = json.Unmarshal(b, &ex)
	}
	return ex, err
}

// writeExitOnce records how a start ended, unless someone already did: the server
// itself on a clean stop, the rigor process that reaped it, or the one that killed it.
func writeExitOnce(dir string, ex exitState) {
	f, err := os.OpenFile(exitPath(dir, ex.PID), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_ = json.NewEncoder(f).Encode(ex)
}
