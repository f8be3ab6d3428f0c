package sim

import (
	"bytes"
	"os"
	"strconv"
)

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
