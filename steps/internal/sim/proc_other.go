//go:build !linux

package sim

import (
	"errors"
	"syscall"
)

// processStat, without /proc, only asks the kernel whether pid exists: the start
// time is not known (0), so a recycled pid cannot be told apart and a zombie counts
// as alive. Linux, where rigor's hosts run, checks both.
func processStat(pid int) (startTicks uint64, zombie bool, err error) {
	if pid <= 0 {
		return 0, false, errors.New("no pid")
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, false, err
	}
	return 0, false, nil
}

// serverProcesses finds no server without /proc: only adoptOrphan's server.json
// tells of one.
func serverProcesses(dir string) []int { return nil }
