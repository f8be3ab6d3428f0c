package engine

// FailureClass names why an attempt failed. Every failure has one; the policy of a
// class decides whether the campaign goes on.
type FailureClass string

// Failure classes (DESIGN.md, engine semantics 4).
const (
	ClassIdentity           FailureClass = "identity"
	ClassRestart            FailureClass = "restart"
	ClassOOM                FailureClass = "oom"
	ClassHealth             FailureClass = "health"
	ClassMissingTerminal    FailureClass = "missing_terminal_metadata"
	ClassUndrained          FailureClass = "undrained"
	ClassPowerDrift         FailureClass = "power_drift"
	ClassInstrumentation    FailureClass = "instrumentation_incomplete"
	ClassFrozenInputChanged FailureClass = "frozen_input_changed"
	ClassIncomplete         FailureClass = "incomplete"
	ClassGate               FailureClass = "gate"
	ClassTimeout            FailureClass = "timeout"
	ClassToolMissing        FailureClass = "tool_missing"
	ClassExec               FailureClass = "exec"
	ClassConfig             FailureClass = "config"
	ClassInternal           FailureClass = "internal"
	ClassInterrupted        FailureClass = "interrupted"
	ClassCrash              FailureClass = "crash"
	ClassOutageBudget       FailureClass = "outage_budget"
	// ClassEvidenceWrite: evidence could not be written (disk full, read-only file
	// system, EIO). It ends measurement; the always-steps still run.
	ClassEvidenceWrite FailureClass = "evidence_write"
	// ClassRecord is a request-level failure: kept in its denominator, it makes its
	// cell ineligible for ranking, and the campaign goes on.
	ClassRecord FailureClass = "record"
)

// Policy is what the engine does after a failure.
type Policy string

// Policies.
const (
	PolicyStopCampaign Policy = "stop_campaign"
	PolicyRecord       Policy = "record"
)

// DefaultPolicy maps a class to its default policy: everything stops the campaign
// except request-level failures, which are recorded.
func DefaultPolicy(c FailureClass) Policy {
	if c == ClassRecord {
		return PolicyRecord
	}
	return PolicyStopCampaign
}

// policyFor applies a step's on_failure override.
func policyFor(c FailureClass, onFailure string) Policy {
	switch onFailure {
	case "stop":
		return PolicyStopCampaign
	case "continue":
		return PolicyRecord
	}
	return DefaultPolicy(c)
}
