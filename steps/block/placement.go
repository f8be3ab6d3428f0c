package block

import (
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

var _ engine.RunsAgainst = Step{}

// RunsAgainst names the target the block measures, so a held campaign that continues
// runs the deploy of that target again before the block (engine.RunsAgainst).
func (Step) RunsAgainst(config cty.Value) string { return target.Placement(config) }
