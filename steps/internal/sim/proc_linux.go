package sim

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
)

// processStat reads a process's start time (field 22 of /proc/<pid>/stat, in clock
// ticks since boot) and whether it is a zombie. The start time tells the server apart
// from an unrelated process that got its pid after it died.
func processStat(pid int) (startTicks uint64, zombie bool, err error) {
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

// serverProcesses lists the live processes serving the container directory dir:
// their command line ends as spawn writes it ("sim serve --container DIR"), which
// the kernel shows from the moment the server process began.
func serverProcesses(dir string) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	tail := []byte("\x00sim\x00serve\x00--container\x00" + dir + "\x00")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.HasSuffix(b, tail) && processAlive(pid, 0) {
			pids = append(pids, pid)
		}
	}
	return pids
}
