package steps

import "github.com/rigor-bench/rigor/steps/internal/child"

// KillChildren kills the process groups of the commands steps have started and
// not yet waited for (exec commands, nsys, restore preflights) and returns how
// many: for an exit that cannot wait for the steps to end, so that none of their
// commands, a restore's among them, runs on without rigor.
func KillChildren() int { return child.KillAll() }
