package engine

import (
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/plans/redact"
	"github.com/zclconf/go-cty/cty"
)

// secretsOf collects the sensitive strings of a step's evaluated configuration,
// before the engine unmarks it for the step: StepContext.Secrets.
func secretsOf(cfg cty.Value) []string { return plans.SensitiveStrings(cfg) }

// Redact replaces every secret in s with plans.SensitiveText.
func (sc *StepContext) Redact(s string) string { return NewRedactor(sc.Secrets...).String(s) }

// Redacted returns r with the step's secrets redacted from its message, for
// messages that quote a child's output or an error that may carry a value: the
// message goes into the journal.
func (sc *StepContext) Redacted(r Result) Result {
	r.Message = sc.Redact(r.Message)
	return r
}

// Redactor replaces secrets in text (redact.Redactor): the engine's evidence and
// the CLI's logs redact through it.
type Redactor = redact.Redactor

// NewRedactor returns a Redactor for secrets; empty strings are ignored.
func NewRedactor(secrets ...string) *Redactor { return redact.New(secrets...) }
