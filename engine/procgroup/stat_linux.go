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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false, err
	}
	// The command name (field 2) is in parentheses and may hold spaces or ')': the
	// fields that follow start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 20 {
		return 0, false, fmt.Errorf("/proc/%d/stat: %d fields after the command name", pid, len(f))
	}
	state := f[0] // field 3
	ticks, err := strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("/proc/%d/stat: starttime: %w", pid, err)
	}
	return ticks, len(state) == 1 && (state[0] == 'Z' || state[0] == 'X'), nil
}

// groupLive reports whether a process that is not a zombie is in process group
// pgid. A zombie counts for kill(2), and one whose parent died is reaped only if
// the machine's first process reaps (a container's may not).
func groupLive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return killable(pgid)
	}
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 3 || string(f[2]) != strconv.Itoa(pgid) {
			continue
		}
		if s := f[0]; len(s) != 1 || (s[0] != 'Z' && s[0] != 'X') {
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
