package calibrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step is the calibrate step type.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}

var spec = hcldec.ObjectSpec{
	"concurrency":     &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "concurrency", Type: cty.Number, Required: true}, Func: plans.WholeAtLeast("concurrency", 1)},
	"tokens":          &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "tokens", Type: cty.Number, Required: true}, Func: plans.WholeAtLeast("tokens", 1)},
	"requests":        &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "requests", Type: cty.Number}, Func: plans.WholeAtLeast("requests", 1)},
	"tpot":            &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "tpot", Type: cty.String}, Func: plans.PositiveDuration("tpot", 0, "20ms")},
	"first_token":     &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "first_token", Type: cty.String}, Func: plans.PositiveDuration("first_token", 0, "200ms")},
	"nominal_context": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "nominal_context", Type: cty.Number}, Func: plans.WholeAtLeast("nominal_context", 1)},
	"max_ttft_error":  &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "max_ttft_error", Type: cty.String}, Func: plans.PositiveDuration("max_ttft_error", 0, "25ms")},
	"max_tpot_error":  &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "max_tpot_error", Type: cty.String}, Func: plans.PositiveDuration("max_tpot_error", 0, "2ms")},
}

var outputType = cty.Object(map[string]cty.Type{
	"passed":              cty.Bool,
	"ttft_error_p50_ms":   cty.Number,
	"ttft_error_p99_ms":   cty.Number,
	"tpot_error_p50_ms":   cty.Number,
	"tpot_error_p99_ms":   cty.Number,
	"schedule_lag_p99_ms": cty.Number,
	"cpu_s_per_1k_tokens": cty.Number,
})

// Spec is the schema of a calibrate step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType lists the calibration figures a later step may reference.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds a calibration that the plan gives no timeout.
func (Step) DefaultTimeout() time.Duration { return 10 * time.Minute }

// Run calibrates the client and writes requests.jsonl and calibration.json.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	o, err := optionsOf(sc)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	if err := o.Validate(); err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	tally := loadgen.NewTally(o.withDefaults().Requests)
	o.OnRecord = func(r loadgen.Record) {
		if tally.Add(r) && sc.Progress != nil {
			sc.Progress(engine.Progress{Done: tally.Done, Failed: tally.Failed, Total: tally.Total, Rate: tally.Rate()})
		}
	}
	out, err := os.Create(sc.Path("requests.jsonl"))
	if err != nil {
		return engine.Failed(engine.ClassInternal, "create requests.jsonl: %v", err)
	}
	rep, runErr := Run(ctx, o, out)
	_ = out.Sync()
	out.Close()
	if rep == nil {
		return engine.Failed(engine.ClassConfig, "calibration could not run: %v", runErr)
	}
	b, err := json.MarshalIndent(rep, "", "  ")
	if err == nil {
		err = os.WriteFile(sc.Path("calibration.json"), append(b, '\n'), 0o644)
	}
	if err != nil {
		return engine.Failed(engine.ClassInternal, "write calibration.json: %v", err)
	}
	outputs := outputsOf(rep)
	// Rounded to the microsecond and the millisecond of CPU for the log line;
	// calibration.json keeps every digit.
	micro := func(x float64) float64 { return math.Round(x*1000) / 1000 }
	sc.Log.Info().Float64("ttft_err_p99_ms", micro(val(rep.TTFTMS.AbsP99))).Float64("tpot_err_p99_ms", micro(val(rep.TPOTMS.AbsP99))).
		Float64("cpu_s_per_1k_tok", micro(rep.CPUSecondsPer1k)).Msg("calibration finished")
	switch {
	case ctx.Err() != nil:
		return engine.Result{Status: engine.StatusInterrupted, Class: engine.ClassInterrupted, Message: "calibration cancelled", Outputs: outputs}
	case errors.Is(runErr, loadgen.ErrBlockBound):
		return engine.FailedWith(engine.ClassIncomplete, outputs, "calibration incomplete: %v", runErr)
	case runErr != nil:
		return engine.FailedWith(engine.ClassInternal, outputs, "calibration: %v", runErr)
	}
	if err := rep.CheckGates(); err != nil {
		return engine.FailedWith(engine.ClassGate, outputs, "%v", err)
	}
	return engine.Succeeded(outputs)
}

func optionsOf(sc *engine.StepContext) (Options, error) {
	cfg := sc.Config
	o := Options{
		Concurrency: target.Int(cfg, "concurrency", 0), Tokens: target.Int(cfg, "tokens", 0),
		Requests: target.Int(cfg, "requests", 0), NominalContext: target.Int(cfg, "nominal_context", 0),
		Timeout: sc.Instance.Meta.Timeout,
	}
	if o.Timeout <= 0 {
		o.Timeout = (Step{}).DefaultTimeout()
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"tpot", &o.TPOT}, {"first_token", &o.FirstToken}, {"max_ttft_error", &o.MaxTTFTError}, {"max_tpot_error", &o.MaxTPOTError}} {
		s := target.Str(cfg, d.name)
		if s == "" {
			continue
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return o, fmt.Errorf("%s: %v", d.name, err)
		}
		*d.dst = v
	}
	return o, nil
}

func outputsOf(r *Report) cty.Value {
	return cty.ObjectVal(map[string]cty.Value{
		"passed":              cty.BoolVal(r.Passed),
		"ttft_error_p50_ms":   cty.NumberFloatVal(val(r.TTFTMS.AbsP50)),
		"ttft_error_p99_ms":   cty.NumberFloatVal(val(r.TTFTMS.AbsP99)),
		"tpot_error_p50_ms":   cty.NumberFloatVal(val(r.TPOTMS.AbsP50)),
		"tpot_error_p99_ms":   cty.NumberFloatVal(val(r.TPOTMS.AbsP99)),
		"schedule_lag_p99_ms": cty.NumberFloatVal(val(r.ScheduleLagMS.P99)),
		"cpu_s_per_1k_tokens": cty.NumberFloatVal(r.CPUSecondsPer1k),
	})
}

// val reads an optional figure; a missing one is -1 in outputs (cty numbers cannot
// be NaN), which fails any "<=" gate a plan writes on it.
func val(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}
