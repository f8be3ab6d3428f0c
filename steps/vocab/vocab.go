package vocab

import (
	"fmt"

	"github.com/docker/go-units"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/docker"
	"github.com/rigor-bench/rigor/steps/internal/gpu"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Vocabulary returns every enumeration and format plans.EnumNames and
// plans.CheckNames name.
func Vocabulary() plans.Vocabulary {
	return plans.Vocabulary{
		Enums: map[string][]string{
			plans.EnumRuntime:      target.Runtimes(),
			plans.EnumGPUSource:    gpu.Sources(),
			plans.EnumSimProfile:   sim.ProfileNames(),
			plans.EnumEngine:       promscrape.Engines(),
			plans.EnumReasoning:    sim.ReasoningFields(),
			plans.EnumFault:        sim.FaultNames(),
			plans.EnumCorpus:       corpus.Kinds(),
			plans.EnumPrefixes:     corpus.PrefixModes(),
			plans.EnumAPI:          loadgen.APIs(),
			plans.EnumFailureClass: engine.FailureClasses(),
		},
		Checks: map[string]func(cty.Value) error{
			plans.CheckFaults: func(v cty.Value) error {
				_, err := target.ParseFaults(v)
				return err
			},
			plans.CheckCacheReset: func(v cty.Value) error {
				_, err := target.ParseCacheReset(v.AsString())
				return err
			},
			plans.CheckIdentityHeader: func(v cty.Value) error { return target.CheckIdentityHeader(v.AsString()) },
			plans.CheckDocker:         func(v cty.Value) error { return docker.CheckHost(v.AsString()) },
			plans.CheckDCGM: func(v cty.Value) error {
				_, err := gpu.ParseDCGMURL(v.AsString())
				return err
			},
			plans.CheckSize: func(v cty.Value) error {
				if _, err := units.RAMInBytes(v.AsString()); err != nil {
					return fmt.Errorf("%q is not a size such as \"16g\" or \"64GiB\"", v.AsString())
				}
				return nil
			},
		},
	}
}
