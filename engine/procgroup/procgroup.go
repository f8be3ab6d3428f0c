package procgroup

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// filePrefix starts the name of a group's record in an attempt directory:
// process-group-<pgid>-<leader's start ticks>-<boot id>. The record is an empty
// file, its name all it says: an empty file takes no block of a file system, so
// it is written even on a full disk (a restore's commands are recorded too), and
// removing it frees none that the evidence written after it could come to need.
const filePrefix = "process-group-"

// Group is the record of one process group a step's command runs in.
type Group struct {
	PGID int
	// StartTicks is the group leader's start time (clock ticks since boot, 0 where
	// unknown): a live process with the pgid's pid but another start time is not
	// the leader, and its group is not the step's.
	StartTicks uint64
	// Boot is the boot the group ran in ("unknown" where the system does not say):
	// after a reboot (a lost machine), the numbers name other processes.
	Boot string
}

func (g Group) name() string {
	return filePrefix + strconv.Itoa(g.PGID) + "-" + strconv.FormatUint(g.StartTicks, 10) + "-" + g.Boot
}

func parseName(name string) (Group, error) {
	f := strings.SplitN(strings.TrimPrefix(name, filePrefix), "-", 3)
	var g Group
	var err1, err2 error
	if len(f) == 3 {
		g.PGID, err1 = strconv.Atoi(f[0])
		g.StartTicks, err2 = strconv.ParseUint(f[1], 10, 64)
		g.Boot = f[2]
	}
	if len(f) != 3 || err1 != nil || err2 != nil || g.PGID <= 1 || g.Boot == "" {
		return Group{}, errors.New("not a process group record (process-group-<pgid>-<start ticks>-<boot id>)")
	}
	return g, nil
}

type dirKey struct{}

// WithDir returns ctx carrying the attempt directory the groups of the commands
// started under it are recorded in.
func WithDir(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, dirKey{}, dir)
}

// Dir is the attempt directory ctx carries ("" when none).
func Dir(ctx context.Context) string {
	dir, _ := ctx.Value(dirKey{}).(string)
	return dir
}

// Record records the group pgid leads in dir and returns the function that
// removes the record, for when the command has ended. A record that cannot be
// written (no inode left) is no reason not to run the command: the step, a
// restore perhaps, runs all the same, and only a kill of the apply would then
// leave the group unknown to the next.
func Record(dir string, pgid int) (remove func()) {
	if dir == "" {
		return func() {}
	}
	ticks, _, _ := Stat(pgid)
	path := filepath.Join(dir, Group{PGID: pgid, StartTicks: ticks, Boot: bootID()}.name())
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return func() {}
	}
	_ = f.Close()
	return func() { _ = os.Remove(path) }
}

// KillLeft kills the process groups recorded in dir that still have a process,
// waits until they have none, and returns what it killed. The records stay: they
// are the dead attempt's evidence of what it left running.
func KillLeft(dir string) ([]Group, error) {
	names, err := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
	if err != nil {
		return nil, err
	}
	var killed []Group
	var errs []error
	for _, name := range names {
		g, err := parseName(filepath.Base(name))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		if !g.alive() {
			continue
		}
		if err := syscall.Kill(-g.PGID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("kill process group %d: %w", g.PGID, err))
			continue
		}
		if !g.waitGone(5 * time.Second) {
			errs = append(errs, fmt.Errorf("process group %d still has a process 5s after SIGKILL", g.PGID))
			continue
		}
		killed = append(killed, g)
	}
	return killed, errors.Join(errs...)
}

// IsRecord reports whether a file name is that of a group's record.
func IsRecord(name string) bool {
	_, err := parseName(name)
	return strings.HasPrefix(name, filePrefix) && err == nil
}

// Forget removes the records in dir: once KillLeft has killed what they named,
// they are no longer needed where they are not evidence (a state's root).
func Forget(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, filePrefix+"*"))
	for _, name := range names {
		if IsRecord(filepath.Base(name)) {
			_ = os.Remove(name)
		}
	}
}

// alive reports whether the group still has a process of the step's: the group
// ran in this boot, some process that is not a zombie is in it, and its leader,
// if alive, is the one recorded. A group whose leader died is taken to be the
// step's still: its number could be another group's only if every process of the
// step's group had ended, a new process had taken the number and led a group of
// its own, and that leader had died leaving members behind, all between the crash
// and this recovery.
func (g Group) alive() bool {
	if boot := bootID(); g.Boot != boot && g.Boot != unknownBoot && boot != unknownBoot {
		return false
	}
	if !groupLive(g.PGID) {
		return false
	}
	ticks, zombie, err := Stat(g.PGID)
	if err != nil || zombie || g.StartTicks == 0 || ticks == 0 {
		return true
	}
	return ticks == g.StartTicks
}

func (g Group) waitGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if !groupLive(g.PGID) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// unknownBoot stands for the boot of a system that does not say which it is.
const unknownBoot = "unknown"

// killable reports whether kill(2) finds a process in group pgid.
func killable(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Describe is what a log line says of killed groups: "process group 123, ...".
func Describe(groups []Group) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = fmt.Sprintf("process group %d", g.PGID)
	}
	return strings.Join(parts, ", ")
}
