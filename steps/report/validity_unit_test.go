package report

import (
	"strings"
	"testing"
)

// The TPOT floor judges a block by its median capacity TPOT: one short completion
// streamed in a single multi-token chunk (near-zero TPOT) does not fail a block
// whose requests decoded at a physical speed, and a block decoded faster than the
// floor as a whole does.
func TestTPOTFloorUsesTheMedian(t *testing.T) {
	cases := []struct {
		name   string
		tpots  []float64
		scale  float64
		result string
		detail string
	}{
		{"one coalesced request", []float64{0.0015, 0.09, 0.1, 0.11, 0.095}, 0.02, CheckPass,
			"median capacity TPOT 0.0950 ms over 5 requests against a floor of 0.004 ms (0.2 ms × time_scale 0.02)"},
		{"mis-stamped block", []float64{0.001, 0.002, 0.003, 0.5}, 0.02, CheckFail,
			"median capacity TPOT 0.0025 ms over 4 requests against a floor of 0.004 ms"},
		{"real time", []float64{0.15, 0.18, 0.19}, 1, CheckFail, "median capacity TPOT 0.1800 ms over 3 requests against a floor of 0.2 ms"},
		{"nothing measured", nil, 1, CheckUnavailable, "no capacity TPOT measured"},
	}
	for _, c := range cases {
		res, detail := tpotFloor(c.tpots, c.scale)
		if res != c.result || !strings.Contains(detail, c.detail) {
			t.Errorf("%s: %s %q; want %s containing %q", c.name, res, detail, c.result, c.detail)
		}
		if c.scale == 1 && strings.Contains(detail, "time_scale") {
			t.Errorf("%s: a real target's floor is not scaled: %q", c.name, detail)
		}
	}
}
