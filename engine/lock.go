package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/flock"
)

// Lock holds a state directory for one apply.
type Lock struct {
	fl  *flock.Flock
	pid string
}

// ErrLocked says another rigor process holds the state directory.
type ErrLocked struct {
	Dir string
	Pid int
}

func (e *ErrLocked) Error() string {
	if e.Pid > 0 {
		return fmt.Sprintf("state directory %s is in use by another rigor process (pid %d); wait for it to finish or stop it first", e.Dir, e.Pid)
	}
	return fmt.Sprintf("state directory %s is in use by another rigor process", e.Dir)
}

// AcquireLock takes the state directory's lock, waiting at most half a second (a
// status probing it holds it for an instant), never for another apply.
func AcquireLock(stateDir string) (*Lock, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	path := filepath.Join(stateDir, lockFile)
	fl := flock.New(path)
	ok, err := fl.TryLock()
	// A status probing the lock (LockHolder) holds it for an instant: try a few
	// times before calling it another apply's.
	for tries := 0; err == nil && !ok && tries < 50; tries++ {
		time.Sleep(10 * time.Millisecond)
		ok, err = fl.TryLock()
	}
	if err != nil {
		return nil, fmt.Errorf("lock state directory %s: %w", stateDir, err)
	}
	pidPath := path + ".pid"
	if !ok {
		return nil, &ErrLocked{Dir: stateDir, Pid: lockPID(pidPath)}
	}
	_ = os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return &Lock{fl: fl, pid: pidPath}, nil
}

// Release gives the lock back.
func (l *Lock) Release() error {
	_ = os.Remove(l.pid)
	return l.fl.Unlock()
}

// LockHolder reports whether a rigor process holds the state directory's lock now,
// and the pid lock.pid names (0 when none). It takes a shared lock for an instant
// to find out, and never creates the lock file: a state no apply ever locked is
// not held.
func LockHolder(stateDir string) (held bool, pid int) {
	path := filepath.Join(stateDir, lockFile)
	if _, err := os.Stat(path); err != nil {
		return false, 0
	}
	pid = lockPID(path + ".pid")
	fl := flock.New(path, flock.SetFlag(os.O_RDONLY))
	ok, err := fl.TryRLock()
	if err != nil {
		return false, pid
	}
	if ok {
		_ = fl.Unlock()
		return false, pid
	}
	return true, pid
}

// lockPID is the pid a lock.pid file names, 0 when it names none.
func lockPID(path string) int {
	b, _ := os.ReadFile(path)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}
