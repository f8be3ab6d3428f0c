package steps

import (
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/exec"
	"github.com/rigor-bench/rigor/steps/freeze"
	"github.com/rigor-bench/rigor/steps/restore"
)

// Registry returns every built-in step type by name.
func Registry() engine.Registry {
	return engine.Registry{
		"block":   block.Step{},
		"deploy":  deploy.Step{},
		"exec":    exec.Step{},
		"freeze":  freeze.Step{},
		"restore": restore.Step{},
	}
}
