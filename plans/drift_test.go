package plans_test

import (
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

func TestDriftControlArm(t *testing.T) {
	abba := []plans.ArmTarget{
		{"primary", "incumbent_before", "incumbent"}, {"primary", "candidate", "flare"},
		{"primary", "candidate_2", "flare"}, {"primary", "incumbent_after", "incumbent"},
	}
	// Two matrices with the same arms: the rule's matrix decides which is compared.
	twin := append(append([]plans.ArmTarget{}, abba...),
		plans.ArmTarget{"extended", "incumbent_before", "incumbent"}, plans.ArmTarget{"extended", "candidate", "flare"},
		plans.ArmTarget{"extended", "incumbent_late", "incumbent"})
	cases := map[string]struct {
		arms   []plans.ArmTarget
		matrix string
		want   string
	}{
		"the named matrix, not the first":       {arms: twin, matrix: "extended", want: "incumbent_late"},
		"the first matrix when none is named":   {arms: twin, want: "incumbent_after"},
		"ABBA":                                  {arms: abba, want: "incumbent_after"},
		"no arm after the candidate":            {arms: abba[:3], want: ""},
		"the last of two after-arms":            {arms: append(append([]plans.ArmTarget{}, abba...), plans.ArmTarget{"primary", "incumbent_late", "incumbent"}), want: "incumbent_late"},
		"an after-arm on another target":        {arms: append(append([]plans.ArmTarget{}, abba[:3]...), plans.ArmTarget{"primary", "other", "vllm"}), want: ""},
		"an incumbent arm of another matrix":    {arms: append(append([]plans.ArmTarget{}, abba[:3]...), plans.ArmTarget{"extended", "incumbent_after", "incumbent"}), want: ""},
		"an incumbent arm before the candidate": {arms: []plans.ArmTarget{abba[0], {"primary", "incumbent_again", "incumbent"}, abba[1]}, want: ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := plans.DriftControlArm(tc.arms, tc.matrix, "incumbent_before", "candidate"); got != tc.want {
				t.Errorf("DriftControlArm = %q, want %q", got, tc.want)
			}
		})
	}
}
