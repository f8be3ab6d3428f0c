package engine_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rigor-bench/rigor/engine"
)

// LockHolder tells an apply at work (the lock held) from a crash (the lock free,
// lock.pid left behind), and never creates the lock file of a state no apply
// locked.
func TestLockHolder(t *testing.T) {
	dir := t.TempDir()
	if held, _ := engine.LockHolder(dir); held {
		t.Fatal("a state no apply locked is held")
	}
	if _, err := os.Stat(filepath.Join(dir, "lock")); !os.IsNotExist(err) {
		t.Fatalf("LockHolder created the lock file: %v", err)
	}
	l, err := engine.AcquireLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if held, pid := engine.LockHolder(dir); !held || pid != os.Getpid() {
		t.Fatalf("held %v by %d while this process (%d) holds it", held, pid, os.Getpid())
	}
	// The probe lets go at once: another apply still gets the lock after it.
	if _, err := engine.AcquireLock(dir); err == nil {
		t.Fatal("a second lock was granted while the first is held")
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if held, _ := engine.LockHolder(dir); held {
		t.Fatal("held after release")
	}
	l2, err := engine.AcquireLock(dir)
	if err != nil {
		t.Fatalf("lock after a probe: %v", err)
	}
	_ = l2.Release()
}
