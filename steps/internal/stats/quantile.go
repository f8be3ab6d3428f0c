package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// CertifyConfidence is the one-sided confidence at which a tail percentile is
// certified (MLPerf LoadGen's early-stopping confidence).
const CertifyConfidence = 0.99

// CertifiedMin is the smallest sample count at which a p-quantile (0 < p < 1) can
// be claimed with one-sided confidence c by MLPerf LoadGen's early-stopping rule
// with zero tolerance and one over-quantile sample allowed: the least n with
//
//	P(Binomial(n, 1-p) ≤ 1) = p^n + n·(1-p)·p^(n-1) ≤ 1 - c,
//
// so that, with confidence c, at least two samples lie above the true quantile and
// the second-largest sample bounds it from above. At c = 0.99 this is 64 for p90,
// 130 for p95, 662 for p99 and 6,636 for p99.9. Below it a percentile is
// descriptive.
func CertifiedMin(p, c float64) int {
	if p <= 0 || p >= 1 || c <= 0 || c >= 1 {
		return 0
	}
	lp, lq := math.Log(p), math.Log(1-p)
	for n := 2; ; n++ {
		nf := float64(n)
		// p^n + n(1-p)p^(n-1), in logs: large n underflows nothing this way.
		tail := math.Exp(nf*lp) + math.Exp(math.Log(nf)+lq+(nf-1)*lp)
		if tail <= 1-c {
			return n
		}
	}
}

// QuantileBound is a distribution-free two-sided interval for the p-quantile from
// order statistics: [x(LoRank), x(HiRank)] covers the true quantile with
// probability at least Level whatever the distribution (continuous). A rank of 0
// means that side is unbounded by the sample: there are too few samples.
type QuantileBound struct {
	P         float64  `json:"p"`
	Level     float64  `json:"level"`
	N         int      `json:"samples"`
	Estimate  *float64 `json:"estimate"` // type-7 sample quantile
	LoRank    int      `json:"lo_rank"`
	HiRank    int      `json:"hi_rank"`
	Lo        *float64 `json:"lo"`
	Hi        *float64 `json:"hi"`
	Coverage  float64  `json:"coverage"` // exact binomial coverage of [LoRank, HiRank]
	Needed    int      `json:"certified_from"`
	Certified bool     `json:"certified"`
}

// QuantileInterval computes the order-statistic interval of sorted xs for the
// p-quantile at the given two-sided level, and whether n certifies it (n ≥
// CertifiedMin(p, CertifyConfidence)). With K ~ Binomial(n, p) the number of
// samples below the quantile, P(x(l) ≤ q ≤ x(u)) = P(l ≤ K ≤ u-1); l is the largest
// rank with P(K ≤ l-1) ≤ (1-level)/2 and u the smallest with P(K ≤ u-1) ≥
// 1-(1-level)/2.
func QuantileInterval(sorted []float64, p, level float64) QuantileBound {
	n := len(sorted)
	b := QuantileBound{P: p, Level: level, N: n, Needed: CertifiedMin(p, CertifyConfidence)}
	b.Certified = n >= b.Needed
	if n == 0 {
		return b
	}
	est := quantile7(sorted, p)
	b.Estimate = &est
	bin := distuv.Binomial{N: float64(n), P: p}
	a := (1 - level) / 2
	for l := n; l >= 1; l-- {
		if bin.CDF(float64(l-1)) <= a {
			b.LoRank = l
			break
		}
	}
	for u := 1; u <= n; u++ {
		if bin.CDF(float64(u-1)) >= 1-a {
			b.HiRank = u
			break
		}
	}
	lo, hi := 0.0, float64(n)
	if b.LoRank > 0 {
		v := sorted[b.LoRank-1]
		b.Lo = &v
		lo = float64(b.LoRank)
	}
	if b.HiRank > 0 {
		v := sorted[b.HiRank-1]
		b.Hi = &v
		hi = float64(b.HiRank)
	}
	// P(lo ≤ K ≤ hi-1), with the open sides at 0 and n.
	upper := 1.0
	if b.HiRank > 0 {
		upper = bin.CDF(hi - 1)
	}
	lower := 0.0
	if b.LoRank > 0 {
		lower = bin.CDF(lo - 1)
	}
	b.Coverage = upper - lower
	return b
}
