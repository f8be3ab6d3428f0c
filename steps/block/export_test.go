package block

import "github.com/rigor-bench/rigor/steps/internal/agent"

// SetInProcessAgents lets a test run agents inside its own process, beside an
// in-process simulator: their CPU share then counts the simulator's work too, so
// only a limit no process reaches keeps the saturation check out of tests that are
// not about it.
func SetInProcessAgents() func() {
	old := fleetLimits
	fleetLimits = agent.Limits{MaxCPUShare: 1000}
	return func() { fleetLimits = old }
}
