package plans

// ArmTarget is one matrix arm and the name of the target it runs. A list of them in
// plan order is what the drift-control arm of a decision rule is derived from.
type ArmTarget struct {
	Matrix, Arm, Target string
}

// DriftControlArm is the drift-control arm of a decision rule: the last arm after
// the candidate arm, in the rule's matrix, that runs the baseline's target (the
// second A of ABBA); "" when there is none. arms is in plan order and may list an
// arm once per cell. matrix is the rule's matrix; "" (a plan frozen before rules
// named their matrix) means the first matrix with the baseline arm. The report
// compares against it, and an amendment that changes it changes what the rule
// compares.
func DriftControlArm(arms []ArmTarget, matrix, baseline, candidate string) string {
	target := ""
	for _, a := range arms {
		if a.Arm == baseline && (matrix == "" || a.Matrix == matrix) {
			matrix, target = a.Matrix, a.Target
			break
		}
	}
	seenCand, out := false, ""
	for _, a := range arms {
		if a.Matrix != matrix {
			continue
		}
		if a.Arm == candidate {
			seenCand = true
			continue
		}
		if seenCand && a.Arm != baseline && target != "" && a.Target == target {
			out = a.Arm
		}
	}
	return out
}
