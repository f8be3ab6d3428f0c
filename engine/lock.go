package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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

// AcquireLock takes the state directory's lock without waiting.
func AcquireLock(stateDir string) (*Lock, error) {
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	path := filepath.Join(stateDir, lockFile)
	fl := flock.New(path)
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock state directory %s: %w", stateDir, err)
	}
	pidPath := path + ".pid"
	if !ok {
		b, _ := os.ReadFile(pidPath)
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return nil, &ErrLocked{Dir: stateDir, Pid: pid}
	}
	_ = os.WriteFile(pidPath, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
	return &Lock{fl: fl, pid: pidPath}, nil
}

// Release gives the lock back.
func (l *Lock) Release() error {
	_ = os.Remove(l.pid)
	return l.fl.Unlock()
}
