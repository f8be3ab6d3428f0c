package sim

import (
	"regexp"
	"slices"
	"testing"
)

// The streaming path appends words without JSON escaping; that is only sound while every
// word is plain letters.
func TestVocabularyNeedsNoEscaping(t *testing.T) {
	plain := regexp.MustCompile(`^[a-z]+$`)
	for _, w := range append(append([]string{}, reasoningWords...), contentWords...) {
		if !plain.MatchString(w) {
			t.Errorf("word %q is not plain letters", w)
		}
	}
}

// The natural output length is log-normal around the profile's median (50 tokens, which
// seed 001's C1 pilot count fixes, see profile.go) with seed 003's spread: p95/p50 =
// 329/229.
func TestOutputLengthsFollowSeed003Spread(t *testing.T) {
	p := builtinProfiles["incumbent"]
	var lengths []int
	for i := 0; i < 2000; i++ {
		plan, err := planRequest(p, Faults{}, seedFor(1, string(rune(i))+"x"), 2048, "max", true, lengthRequest{})
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, plan.total)
		if plan.reasoning >= plan.total || plan.reasoning == 0 {
			t.Fatalf("reasoning %d of %d at effort max", plan.reasoning, plan.total)
		}
	}
	slices.Sort(lengths)
	p50, p95 := lengths[len(lengths)/2], lengths[len(lengths)*95/100]
	spread, seed003 := float64(p95)/float64(p50), 329.0/229.0
	if p50 < 47 || p50 > 53 || spread < 0.95*seed003 || spread > 1.05*seed003 {
		t.Errorf("completion tokens p50 %d p95 %d (p95/p50 %.3f); want p50 about 50 and seed 003's p95/p50 %.3f", p50, p95, spread, seed003)
	}
}

func TestReasoningEffortShiftsTheSplit(t *testing.T) {
	p := builtinProfiles["incumbent"]
	share := func(effort string) float64 {
		var r, n int
		for i := 0; i < 500; i++ {
			plan, err := planRequest(p, Faults{}, uint64(i), 2048, effort, true, lengthRequest{})
			if err != nil {
				t.Fatal(err)
			}
			r += plan.reasoning
			n += plan.total
		}
		return float64(r) / float64(n)
	}
	none, low, high, maxE := share("none"), share("low"), share("high"), share("max")
	if !(none == 0 && low < high && high < maxE) {
		t.Errorf("reasoning shares none %.2f low %.2f high %.2f max %.2f", none, low, high, maxE)
	}
}
