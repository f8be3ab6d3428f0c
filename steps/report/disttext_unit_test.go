package report

import (
	"strconv"
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// TestDistTextMarksEachPercentile: the Distributions table marks each of p50 / p95 /
// p99 by its own certified count (11, 130, 662 samples), so a p95 over 88 samples is
// marked descriptive and its p50 is not.
func TestDistTextMarksEachPercentile(t *testing.T) {
	xs := func(n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = float64(i + 1)
		}
		return out
	}
	f := func(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }
	for _, tc := range []struct {
		n    int
		want string
	}{
		{10, "5.50" + descMark + " / 9.55" + descMark + " / 9.91" + descMark},
		{88, "44.50 / 83.65" + descMark + " / 87.13" + descMark},
		{130, "65.50 / 123.55 / 128.71" + descMark},
		{662, "331.50 / 628.95 / 655.39"},
	} {
		if got := distText(loadgen.Summarise(xs(tc.n)), f); got != tc.want {
			t.Errorf("n=%d: %q, want %q", tc.n, got, tc.want)
		}
	}
}
