//go:build !unix

package sim

import "time"

// processCPU is unknown here; the benchmarks then report no CPU-time figures.
func processCPU() time.Duration { return 0 }
