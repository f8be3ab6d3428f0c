package engine

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// Step is a step type: its schema and output type (plans.StepType) and how to run
// one instance.
type Step interface {
	plans.StepType
	Run(ctx context.Context, sc *StepContext) Result
}

// FileInputs is implemented by step types whose configuration names files: their
// content goes into the input hash, and frozen ones are re-checked before the run.
type FileInputs interface {
	Files(config cty.Value) []string
}

// DefaultTimeout is implemented by step types that have a natural hard bound when the
// plan sets none (plans.Plan.Bound reads it).
type DefaultTimeout = plans.DefaultTimeout

// Registry maps step type names to implementations; cmd wires it up.
type Registry map[string]Step

// Types returns the registry as the language sees it.
func (r Registry) Types() plans.StepTypes {
	out := plans.StepTypes{}
	for k, v := range r {
		out[k] = v
	}
	return out
}

// StepContext is what a running step may use.
type StepContext struct {
	Addr     string
	Instance *plans.Instance
	// Plan is the whole loaded plan, so that a failure can point at its source: a
	// port that is taken names the variable the endpoint takes it from.
	Plan *plans.Plan
	// Config is the evaluated configuration with sensitive values unmarked: steps
	// see real values, evidence never does.
	Config cty.Value
	// Secrets are the strings of the configuration that were marked sensitive
	// (plans.SensitiveStrings), so a step can redact them from what it keeps: a
	// child's captured output, its messages. See Redact and Redactor.
	Secrets      []string
	Campaign     string
	Attempt      int
	Dir          string // the attempt directory; everything written here is evidence
	BaseDir      string // the campaign directory, for relative paths in the config
	StateDir     string
	InputsSHA256 string
	Clock        Clock
	Log          zerolog.Logger
	// Progress reports live progress of a long step (a block's requests, say).
	Progress func(Progress)
	// Outage reports the outage clock at the moment of the call.
	Outage func() OutageView
	// Pinned holds, for the names this step's PinnedInputs reported, the digest that
	// first pinned each name (which may differ from what the step sees now: a restore
	// still runs when a protected file changed, and names both in its receipt).
	Pinned map[string]string
	// RerunSafe is the plan's word that this step may run again after an attempt was
	// interrupted (meta-argument rerun_safe); a block then uses new request IDs.
	RerunSafe bool
	// History lists, in journal order, every attempt that has ended, in this apply
	// or an earlier one, with its outputs: how a block finds the identity its arm's
	// deploy recorded and what the previous block on the same target saw.
	History func() []Ended
	// Rigor is the version and commit of the rigor running the step (Options.Rigor),
	// for the results a step writes; empty when the embedding did not say.
	Rigor string
}

// Ended is one ended attempt as History reports it.
type Ended struct {
	Addr    string
	Type    string // the step type, e.g. "deploy"
	Attempt int
	Status  Status
	Class   FailureClass
	// Outputs are what the attempt produced, in its step type's output type, or
	// cty.NilVal when it produced none.
	Outputs cty.Value
	Seq     int // the journal record that ended it
}

// Path returns the path of an artefact in the attempt directory.
func (sc *StepContext) Path(name string) string { return filepath.Join(sc.Dir, name) }

// Progress is a step's live progress.
type Progress struct {
	Done, Failed, Total int
	Rate                string // free text such as "412 tok/s"
	// Sending says the step is about to send its first request: a capture that
	// runs during a block counts its start_after from this moment.
	Sending bool
}

// Status is the outcome of an attempt, or why a step never ran.
type Status string

// Statuses recorded in step_end records.
const (
	StatusSucceeded   Status = "succeeded"
	StatusFailed      Status = "failed"
	StatusInterrupted Status = "interrupted"
	StatusBlocked     Status = "blocked"
	StatusDeferred    Status = "deferred"
	// StatusSkipped: the step's condition was false when it could have started, or
	// a dependency was skipped.
	StatusSkipped Status = "skipped"
)

// Result is what a step returns.
type Result struct {
	Status  Status
	Class   FailureClass
	Message string
	Outputs cty.Value
}

// Succeeded is a successful result with outputs.
func Succeeded(outputs cty.Value) Result { return Result{Status: StatusSucceeded, Outputs: outputs} }

// Failed is a failed result of the given class.
func Failed(class FailureClass, format string, args ...any) Result {
	return Result{Status: StatusFailed, Class: class, Message: fmt.Sprintf(format, args...)}
}

// FailedWith is a failed result that still carries outputs, as a block with
// request-level failures does.
func FailedWith(class FailureClass, outputs cty.Value, format string, args ...any) Result {
	r := Failed(class, format, args...)
	r.Outputs = outputs
	return r
}
