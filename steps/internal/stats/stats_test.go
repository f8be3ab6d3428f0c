package stats

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Reference values marked "scipy" were computed independently with SciPy 1.10.1
// and NumPy 1.24.2 (Debian python3-scipy):
//
//	from scipy import stats; import numpy as np
//	stats.t.interval(0.95, n-1, loc=np.mean(xs), scale=stats.sem(xs))
//	stats.skew(xs, bias=False)
//	stats.binom.cdf(k, n, p)
//	(stats.t.ppf(0.975, n-1) + stats.t.ppf(0.8, n-1)) * sd / np.sqrt(n)
const tol = 1e-9

var approx = cmpopts.EquateApprox(0, tol)

func TestTInterval(t *testing.T) {
	cases := map[string]struct {
		xs    []float64
		level float64
		want  Interval
	}{
		// By hand: mean 0.1; deviations -0.02, 0.01, 0.02, -0.01 sum of squares
		// 0.001, s² = 0.001/3, s = 0.0182574; se = s/√4 = 0.0091287; t(0.975, 3) =
		// 3.1824463; half-width 0.0290516 → [0.0709484, 0.1290516]. scipy agrees:
		// (0.07094837284244729, 0.12905162715755272).
		"four gains by hand": {
			xs: []float64{0.08, 0.11, 0.12, 0.09}, level: 0.95,
			want: Interval{N: 4, Mean: 0.1, SD: 0.018257418583505537, Lo: 0.07094837284244729, Hi: 0.12905162715755272,
				Level: 0.95, Method: MethodT, DF: 3, Critical: 3.182446305284263, Skewness: 0},
		},
		// scipy: mean 1.0806200000000001, sd 0.030677793271355162,
		// 95%: (1.0425284885506207, 1.1187115114493795), skew 0.034731682432791705.
		"five paired ratios, scipy": {
			xs: []float64{1.0412, 1.0987, 1.0633, 1.1204, 1.0795}, level: 0.95,
			want: Interval{N: 5, Mean: 1.0806200000000001, SD: 0.030677793271355162, Lo: 1.0425284885506207, Hi: 1.1187115114493795,
				Level: 0.95, Method: MethodT, DF: 4, Critical: 2.7764451051977987, Skewness: 0.034731682432791705},
		},
		// scipy 90%: (1.0513720721632245, 1.1098679278367758).
		"five paired ratios at 90%, scipy": {
			xs: []float64{1.0412, 1.0987, 1.0633, 1.1204, 1.0795}, level: 0.90,
			want: Interval{N: 5, Mean: 1.0806200000000001, SD: 0.030677793271355162, Lo: 1.0513720721632245, Hi: 1.1098679278367758,
				Level: 0.90, Method: MethodT, DF: 4, Critical: 2.131846786326649, Skewness: 0.034731682432791705},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := TInterval(c.xs, c.level)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got, cmpopts.EquateApprox(0, 1e-7)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if _, err := TInterval([]float64{1}, 0.95); err != ErrTooFew {
		t.Errorf("one value: %v, want ErrTooFew", err)
	}
}

func TestSkewnessAndMethodChoice(t *testing.T) {
	// scipy: stats.skew(zs, bias=False) = 3.1167666213919967: one block far slower.
	zs := []float64{1.02, 1.03, 1.01, 1.02, 1.04, 1.03, 1.02, 1.35, 1.01, 1.02}
	if g := Skewness(zs); math.Abs(g-3.1167666213919967) > tol {
		t.Errorf("skewness %v", g)
	}
	cases := map[string]struct {
		xs   []float64
		want string
	}{
		"skewed, ten blocks: bootstrap": {zs, MethodBootstrap},
		// Seven blocks with the same outlier: skewed too, but too few to resample.
		"skewed, seven blocks: t": {[]float64{1.02, 1.03, 1.01, 1.02, 1.04, 1.35, 1.02}, MethodT},
		// Eight, the README's "at least 8": the bootstrap.
		"skewed, eight blocks: bootstrap": {[]float64{1.02, 1.03, 1.01, 1.02, 1.04, 1.35, 1.02, 1.01}, MethodBootstrap},
		"symmetric, five blocks: t":       {[]float64{1.0412, 1.0987, 1.0633, 1.1204, 1.0795}, MethodT},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			iv, err := MeanInterval(c.xs, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if iv.Method != c.want {
				t.Errorf("method %s (skewness %.3f), want %s", iv.Method, iv.Skewness, c.want)
			}
			if !(iv.Lo <= iv.Mean && iv.Mean <= iv.Hi) {
				t.Errorf("interval [%v, %v] does not hold the mean %v", iv.Lo, iv.Hi, iv.Mean)
			}
		})
	}
}

func TestBootstrap(t *testing.T) {
	zs := []float64{1.02, 1.03, 1.01, 1.02, 1.04, 1.03, 1.02, 1.35, 1.01, 1.02}
	a, _ := BootstrapInterval(zs, 0.95, BootstrapResamples, BootstrapSeed)
	b, _ := BootstrapInterval(zs, 0.95, BootstrapResamples, BootstrapSeed)
	if a != b {
		t.Fatal("the bootstrap is not deterministic")
	}
	// Bounds of a bootstrap of the mean lie within [min, max] of the data, and the
	// skew shows: the upper side is farther from the mean than the lower side,
	// which a t-interval (symmetric by construction) cannot show.
	if a.Lo < 1.01 || a.Hi > 1.35 || a.Hi-a.Mean <= a.Mean-a.Lo {
		t.Errorf("bootstrap interval [%v, %v] around %v", a.Lo, a.Hi, a.Mean)
	}
	// Every value equal: every resampled mean equals it.
	c, _ := BootstrapInterval([]float64{2, 2, 2}, 0.95, 100, 1)
	if c.Lo != 2 || c.Hi != 2 {
		t.Errorf("constant data: [%v, %v]", c.Lo, c.Hi)
	}
}

func TestCertifiedMin(t *testing.T) {
	// MLPerf LoadGen's early-stopping minimum query counts at 99% confidence; scipy
	// agrees (least n with binom.cdf(1, n, 1-p) <= 0.01). By hand for p90: n = 63
	// gives 0.9^63 + 6.3·0.9^62 = 0.01048 > 0.01; n = 64 gives 0.00956.
	cases := map[string]struct {
		p    float64
		want int
	}{"p90": {0.90, 64}, "p95": {0.95, 130}, "p99": {0.99, 662}, "p99.9": {0.999, 6636}}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := CertifiedMin(c.p, CertifyConfidence); got != c.want {
				t.Errorf("CertifiedMin(%v) = %d, want %d", c.p, got, c.want)
			}
		})
	}
}

func TestQuantileInterval(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1) // x(k) = k, so a bound's value is its rank
		}
		return xs
	}
	f := func(v float64) *float64 { return &v }
	cases := map[string]struct {
		n    int
		p    float64
		want QuantileBound
	}{
		// The textbook median interval for n = 20: x(6)..x(15), coverage
		// 0.9586105346679688 (scipy: binom.cdf(14,20,.5) - binom.cdf(5,20,.5)).
		"median of 20": {20, 0.5, QuantileBound{P: 0.5, Level: 0.95, N: 20, Estimate: f(10.5), LoRank: 6, HiRank: 15, Lo: f(6), Hi: f(15),
			Coverage: 0.9586105346679688, Needed: 11, Certified: true}},
		// scipy: ranks 84 and 96, coverage 0.955690107191223; 100 ≥ 64 certifies p90.
		"p90 of 100": {100, 0.9, QuantileBound{P: 0.9, Level: 0.95, N: 100, Estimate: f(90.1), LoRank: 84, HiRank: 96, Lo: f(84), Hi: f(96),
			Coverage: 0.955690107191223, Needed: 64, Certified: true}},
		// p95 of 50: no order statistic bounds it from above at 97.5%; 50 < 130, so it
		// is descriptive. scipy coverage of [x(44), ∞): 0.9882135522027357.
		"p95 of 50, upper side open": {50, 0.95, QuantileBound{P: 0.95, Level: 0.95, N: 50, Estimate: f(47.55), LoRank: 44, HiRank: 0, Lo: f(44),
			Coverage: 0.9882135522027357, Needed: 130, Certified: false}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := QuantileInterval(seq(c.n), c.p, 0.95)
			if d := cmp.Diff(c.want, got, approx); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestMDE(t *testing.T) {
	cases := map[string]struct {
		sd   float64
		n    int
		want float64
	}{
		// By hand: (t(.975,2) 4.302653 + t(.8,2) 1.060660) · 0.02/√3 = 0.0619302.
		"sd 2%, 3 repetitions":  {0.02, 3, 0.061930202950790963},
		"sd 5%, 2 repetitions":  {0.05, 2, 0.49789462608792695},   // scipy
		"sd 3%, 10 repetitions": {0.03, 10, 0.029841412049747294}, // scipy
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := MDE(c.sd, c.n, 0.95, Power); math.Abs(got-c.want) > 1e-9 {
				t.Errorf("MDE = %v, want %v", got, c.want)
			}
		})
	}
	// 3% block-pair noise needs 10 repetitions to resolve 3%: MDE(9) > 0.03 ≥ MDE(10).
	n, ok := RepetitionsNeeded(0.03, 0.03, 0.95, Power, 1000)
	if !ok || n != 10 || MDE(0.03, 9, 0.95, Power) <= 0.03 {
		t.Errorf("RepetitionsNeeded = %d, %v", n, ok)
	}
	if _, ok := RepetitionsNeeded(1, 0.001, 0.95, Power, 50); ok {
		t.Error("an unresolvable effect reported as resolvable")
	}
	if got := PairSD(0.02, true); math.Abs(got-0.02*math.Sqrt(1.5)) > tol {
		t.Errorf("PairSD bracketed %v", got)
	}
}
