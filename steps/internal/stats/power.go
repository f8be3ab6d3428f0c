package stats

import "math"

// Power is the probability of resolving an effect the design plans for.
const Power = 0.80

// MDE is the minimum detectable effect of a paired design: the smallest true mean
// difference that a two-sided interval at level excludes from zero with
// probability power, given n paired figures whose standard deviation is sdPair:
//
//	MDE = (t(1-(1-level)/2, n-1) + t(power, n-1)) · sdPair / √n.
//
// NaN for n < 2.
func MDE(sdPair float64, n int, level, power float64) float64 {
	if n < 2 {
		return math.NaN()
	}
	return (TQuantile(1-(1-level)/2, n-1) + TQuantile(power, n-1)) * sdPair / math.Sqrt(float64(n))
}

// RepetitionsNeeded is the least n ≥ 2 (at most limit) whose MDE is at most effect;
// ok is false when even limit repetitions do not resolve it.
func RepetitionsNeeded(sdPair, effect, level, power float64, limit int) (int, bool) {
	if effect <= 0 {
		return 0, false
	}
	for n := 2; n <= limit; n++ {
		if MDE(sdPair, n, level, power) <= effect {
			return n, true
		}
	}
	return limit, false
}

// PairSD is the standard deviation of a paired relative effect when each block
// figure varies independently with coefficient of variation cv: the candidate's
// block against the mean of two bracketing incumbent blocks (ABBA) has variance
// cv²·(1 + 1/2); against one incumbent block, cv²·2.
func PairSD(cv float64, bracketed bool) float64 {
	if bracketed {
		return cv * math.Sqrt(1.5)
	}
	return cv * math.Sqrt(2)
}
