package steps

import "github.com/rigor-bench/rigor/steps/internal/agent"

// AgentServer is `rigor agent`: it runs slices of blocks for a block step that
// names it in agents (package agent). An alias, not a copy.
type AgentServer = agent.Server
