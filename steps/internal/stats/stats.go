package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat/distuv"
)

// Methods an Interval may use.
const (
	MethodT         = "t"         // Student's t over the per-block figures
	MethodBootstrap = "bootstrap" // percentile bootstrap of the mean over blocks
)

// The bootstrap replaces the t-interval when the per-block figures are skewed and
// there are enough blocks to resample: with fewer than BootstrapMinN blocks a
// resample has too few distinct values to describe a distribution, and t is the
// honest choice however skewed they look.
const (
	BootstrapMinN      = 8
	SkewLimit          = 1.0 // |adjusted Fisher-Pearson skewness| above this is "skewed"
	BootstrapResamples = 10000
	BootstrapSeed      = 20261022
)

// ErrTooFew is returned when an interval needs more observations than it was given.
var ErrTooFew = errors.New("too few observations")

// Interval is a two-sided confidence interval for a mean.
type Interval struct {
	N        int     `json:"n"`
	Mean     float64 `json:"mean"`
	SD       float64 `json:"sd"` // sample standard deviation (n-1)
	Lo       float64 `json:"lo"`
	Hi       float64 `json:"hi"`
	Level    float64 `json:"level"`
	Method   string  `json:"method"`
	DF       int     `json:"df,omitempty"`       // t: n-1
	Critical float64 `json:"critical,omitempty"` // t: the t quantile used
	Skewness float64 `json:"skewness"`           // adjusted Fisher-Pearson G1; 0 when n < 3
}

// Mean is the arithmetic mean; NaN for no values.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// SD is the sample standard deviation (denominator n-1); NaN for fewer than two.
func SD(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	m := Mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// Skewness is the adjusted Fisher-Pearson coefficient G1 (what scipy.stats.skew
// returns with bias=False); 0 for fewer than three values or no spread.
func Skewness(xs []float64) float64 {
	n := float64(len(xs))
	if len(xs) < 3 {
		return 0
	}
	m := Mean(xs)
	var m2, m3 float64
	for _, x := range xs {
		d := x - m
		m2 += d * d
		m3 += d * d * d
	}
	m2 /= n
	m3 /= n
	if m2 == 0 {
		return 0
	}
	g1 := m3 / math.Pow(m2, 1.5)
	return g1 * math.Sqrt(n*(n-1)) / (n - 2)
}

// TQuantile is the p-quantile of Student's t with df degrees of freedom.
func TQuantile(p float64, df int) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
}

// TInterval is mean ± t(1-(1-level)/2, n-1) · s/√n.
func TInterval(xs []float64, level float64) (Interval, error) {
	n := len(xs)
	if n < 2 {
		return Interval{N: n}, ErrTooFew
	}
	iv := Interval{N: n, Mean: Mean(xs), SD: SD(xs), Level: level, Method: MethodT, DF: n - 1, Skewness: Skewness(xs)}
	iv.Critical = TQuantile(1-(1-level)/2, n-1)
	h := iv.Critical * iv.SD / math.Sqrt(float64(n))
	iv.Lo, iv.Hi = iv.Mean-h, iv.Mean+h
	return iv, nil
}

// BootstrapInterval is the percentile bootstrap of the mean: resamples means of n
// values drawn with replacement, and the (1-level)/2 and 1-(1-level)/2 quantiles
// (type 7) of those means.
func BootstrapInterval(xs []float64, level float64, resamples int, seed uint64) (Interval, error) {
	n := len(xs)
	if n < 2 {
		return Interval{N: n}, ErrTooFew
	}
	iv := Interval{N: n, Mean: Mean(xs), SD: SD(xs), Level: level, Method: MethodBootstrap, Skewness: Skewness(xs)}
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	means := make([]float64, resamples)
	for i := range means {
		s := 0.0
		for range n {
			s += xs[rng.IntN(n)]
		}
		means[i] = s / float64(n)
	}
	slices.Sort(means)
	a := (1 - level) / 2
	iv.Lo, iv.Hi = quantile7(means, a), quantile7(means, 1-a)
	return iv, nil
}

// MeanInterval is the interval the verdict uses: the t-interval, or the bootstrap
// when there are at least BootstrapMinN figures and their skewness exceeds
// SkewLimit in magnitude. Method says which.
func MeanInterval(xs []float64, level float64) (Interval, error) {
	if len(xs) >= BootstrapMinN && math.Abs(Skewness(xs)) > SkewLimit {
		return BootstrapInterval(xs, level, BootstrapResamples, BootstrapSeed)
	}
	return TInterval(xs, level)
}

// quantile7 is the type-7 quantile of sorted xs (linear between closest ranks).
func quantile7(sorted []float64, q float64) float64 {
	h := q * float64(len(sorted)-1)
	lo := math.Floor(h)
	i := int(lo)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (h-lo)*(sorted[i+1]-sorted[i])
}
