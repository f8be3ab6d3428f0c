package steps

import (
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/block"
	"github.com/rigor-bench/rigor/steps/build"
	"github.com/rigor-bench/rigor/steps/calibrate"
	"github.com/rigor-bench/rigor/steps/deploy"
	"github.com/rigor-bench/rigor/steps/exec"
	"github.com/rigor-bench/rigor/steps/freeze"
	"github.com/rigor-bench/rigor/steps/identity"
	"github.com/rigor-bench/rigor/steps/nsys"
	"github.com/rigor-bench/rigor/steps/restore"
	"github.com/rigor-bench/rigor/steps/trace"
)

// Registry returns every built-in step type by name.
func Registry() engine.Registry {
	return engine.Registry{
		"block":     block.Step{},
		"build":     build.Step{},
		"calibrate": calibrate.Step{},
		"deploy":    deploy.Step{},
		"exec":      exec.Step{},
		"freeze":    freeze.Step{},
		"identity":  identity.Step{},
		"nsys":      nsys.Step{},
		"restore":   restore.Step{},
		"trace":     trace.Step{},
	}
}
