//go:build !linux

package procgroup

import (
	"errors"
	"syscall"
)

// Stat, without /proc, only asks the kernel whether pid exists: the start time is
// not known (0), so a recycled pid cannot be told apart and a zombie counts as
// alive. Linux, where rigor's hosts run, checks both.
func Stat(pid int) (startTicks uint64, zombie bool, err error) {
	if pid <= 0 {
		return 0, false, errors.New("no pid")
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, false, err
	}
	return 0, false, nil
}

// groupLive, without /proc, asks the kernel whether any process, a zombie
// included, is in process group pgid.
func groupLive(pgid int) bool { return killable(pgid) }

// bootID is unknownBoot: without /proc the boot is not known.
func bootID() string { return unknownBoot }
