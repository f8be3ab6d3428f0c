//go:build slow

package sim

import (
	"fmt"
	"testing"
)

// TestProfileFidelityRealTime runs the built-in profiles at time scale 1 against seed 002's
// workload shape (~7.7K-token unique prompts, closed loop at C1 and C4) and holds the live
// medians to within 10% of the seed 002 figures the profiles claim (seed002). It takes about a minute and a half of real time:
//
//	go test -tags slow -run ProfileFidelity ./steps/internal/sim
func TestProfileFidelityRealTime(t *testing.T) {
	requests := map[int]int{1: 8, 4: 32}
	for name, byC := range seed002 {
		for c, want := range byC {
			t.Run(fmt.Sprintf("%s/C%d", name, c), func(t *testing.T) {
				t.Parallel() // separate servers; at time scale 1 the CPU is idle
				p, err := LookupProfile(name)
				if err != nil {
					t.Fatal(err)
				}
				rn := startServer(t, Config{Profile: p})
				ttft, tpot := measuredMedians(closedLoop(t, rn.URL(), c, requests[c], 7682))
				t.Logf("median TTFT %v (seed 002: %v), TPOT %v (seed 002: %v)", ttft, want.ttft, tpot, want.tpot)
				if want.ttft > 0 && !within(ttft, want.ttft, 0.10) {
					t.Errorf("median TTFT %v, seed 002 %v", ttft, want.ttft)
				}
				if !within(tpot, want.tpot, 0.10) {
					t.Errorf("median TPOT %v, seed 002 %v", tpot, want.tpot)
				}
			})
		}
	}
}
