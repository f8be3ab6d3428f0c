// Package stats holds the estimators behind rigor's verdict: intervals over paired
// block ratios (Student's t, or a percentile bootstrap over blocks when the ratios
// are skewed), distribution-free intervals for percentiles from order statistics,
// the sample count that certifies a tail percentile, and the minimum detectable
// effect of a design from the block-to-block variation.
//
// Repetitions (blocks), not requests, are the unit of replication: every interval
// here is over per-block figures, so requests within a block are never treated as
// independent replicates of the comparison.
//
// Invariants:
//   - Every function is deterministic: the bootstrap draws from a PCG generator with
//     a fixed seed, so the same figures always give the same interval.
//   - Quantiles of Student's t and of the binomial come from gonum's distuv, never
//     from a hand-rolled table.
//   - Nothing here reads files or knows about campaigns; package report decides
//     which figures are paired and what a verdict is.
//
// Out of scope: hypothesis tests with p-values, multiple-comparison corrections,
// sequential designs, and any estimator over requests as if they were replicates.
package stats
