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
	// ClassAgent: a load agent of a block (`rigor agent`) could not be reached or
	// its clock bounded, saturated its CPUs, lagged its schedule or disappeared
	// mid-block: the load sent was not the plan's. It stops the campaign (the target
	// did nothing wrong, so it is not an operational failure of the arm); the
	// records received are kept.
	ClassAgent FailureClass = "agent"
	// ClassRecord is a request-level failure: kept in its denominator, it makes its
	// cell ineligible for ranking, and the campaign goes on.
	ClassRecord FailureClass = "record"
)

// FailureClasses lists every class, so a plan's exec failure_class and
// on_failure's class keys (plans.EnumFailureClass) are checked against the
// engine's own list when it is validated.
func FailureClasses() []string {
	all := []FailureClass{
		ClassIdentity, ClassRestart, ClassOOM, ClassHealth, ClassMissingTerminal, ClassUndrained,
		ClassPowerDrift, ClassInstrumentation, ClassFrozenInputChanged, ClassIncomplete, ClassGate,
		ClassTimeout, ClassToolMissing, ClassExec, ClassConfig, ClassInternal, ClassInterrupted,
		ClassCrash, ClassOutageBudget, ClassEvidenceWrite, ClassAgent, ClassRecord,
	}
	out := make([]string, len(all))
	for i, c := range all {
		out[i] = string(c)
	}
	return out
}

// Policy is what the engine does after a failure.
type Policy string

// Policies.
const (
	PolicyStopCampaign Policy = "stop_campaign"
	// PolicyStopArm stops the matrix arm the failed block belongs to: its remaining
	// blocks are blocked, the other arms go on (seed 001: operational failures stop
	// the arm).
	PolicyStopArm Policy = "stop_arm"
	// PolicyHold restores the incumbent and holds the campaign for review, whatever
	// the class (on_failure = "hold").
	PolicyHold   Policy = "hold"
	PolicyRecord Policy = "record"
)

// operational are the classes seed 001 names as operational failures: on a block of
// a matrix arm they stop that arm, elsewhere the campaign.
var operational = map[FailureClass]bool{
	ClassIdentity: true, ClassRestart: true, ClassOOM: true, ClassHealth: true,
	ClassMissingTerminal: true, ClassUndrained: true, ClassPowerDrift: true, ClassInstrumentation: true,
}

// DefaultPolicy maps a class to its default policy: a request-level failure is
// recorded; an operational failure of a block in a matrix arm stops the arm; every
// other failure stops the campaign.
func DefaultPolicy(c FailureClass, inArm bool) Policy {
	switch {
	case c == ClassRecord:
		return PolicyRecord
	case inArm && operational[c]:
		return PolicyStopArm
	}
	return PolicyStopCampaign
}

// policyFor applies a step's on_failure override.
func policyFor(c FailureClass, onFailure string, inArm bool) Policy {
	switch onFailure {
	case "stop":
		return PolicyStopCampaign
	case "continue":
		return PolicyRecord
	case "hold":
		return PolicyHold
	case "stop_arm":
		if inArm {
			return PolicyStopArm
		}
		return PolicyStopCampaign
	}
	return DefaultPolicy(c, inArm)
}
