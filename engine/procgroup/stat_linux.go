package procgroup

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Stat reads a process's start time (field 22 of /proc/<pid>/stat, in clock
// ticks since boot) and whether it is a zombie. The start time tells a process
// apart from an unrelated one that got its pid after it died.
func Stat(pid int) (startTicks uint64, zombie bool, err error) {
	if pid <= 0 {
		return 0, false, errors.New("no pid")
	}
	f, err := statFields(strconv.Itoa(pid))
	if err != nil {
		return 0, false, err
	}
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return ticks, isZombie(f), nil
}

// statFields reads /proc/<pid>/stat and returns its fields from the third (the
// state) on. The command name (field 2) is in parentheses and may hold spaces or
// ')': the fields that follow start after the last ')'.
func statFields(pid string) ([][]byte, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc/%s/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 1 {
		return nil, fmt.Errorf("/proc/%s/stat: no state", pid)
	}
	return f, nil
}

// isZombie reads the state field of statFields' fields.
func isZombie(f [][]byte) bool {
	return len(f[0]) == 1 && (f[0][0] == 'Z' || f[0][0] == 'X')
}

// groupLive reports whether a process that is not a zombie is in process group
// pgid. A zombie counts for kill(2), and one whose parent died is reaped only if
// the machine's first process reaps (a container's may not).
func groupLive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return killable(pgid)
	}
	want := strconv.Itoa(pgid)
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		// Field 5, the process group, is the third after the command name.
		if f, err := statFields(e.Name()); err == nil && len(f) >= 3 && string(f[2]) == want && !isZombie(f) {
			return true
		}
	}
	return false
}

// bootID names this boot of the machine.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		return id
	}
	return unknownBoot
}
