package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// RandomSettings are the lengths of random prompts, as vllm bench serve names them.
type RandomSettings struct {
	InputLen  int `json:"input_len"`  // prompt tokens (rigor's token notion)
	OutputLen int `json:"output_len"` // max_tokens
	// RangeRatio spreads both lengths uniformly over [len × (1 − r), len × (1 + r)],
	// as vllm bench serve's --random-range-ratio; 0 gives every request the same.
	RangeRatio float64 `json:"range_ratio"`
	Seed       int64   `json:"seed"`
}

// Validate reports the first problem with s.
func (s RandomSettings) Validate() error {
	switch {
	case s.InputLen < 1:
		return fmt.Errorf("%w: random input length %d: want >= 1", ErrDataset, s.InputLen)
	case s.OutputLen < 1:
		return fmt.Errorf("%w: random output length %d: want >= 1", ErrDataset, s.OutputLen)
	case s.RangeRatio < 0 || s.RangeRatio >= 1:
		return fmt.Errorf("%w: random range ratio %g: want 0 <= r < 1", ErrDataset, s.RangeRatio)
	}
	return nil
}

type randomSource struct{ s RandomSettings }

// Random returns random prompts: request i's input length n_i and output length m_i
// are drawn uniformly from [⌊len·(1 − r)⌋, ⌈len·(1 + r)⌉] by a PCG stream seeded
// with (seed, i); its prompt is exactly n_i tokens of corpus prose from its own stream
// (so prompts share no prefix), sent as one user message, and its max_tokens is m_i.
func Random(s RandomSettings) (loadgen.Source, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return randomSource{s}, nil
}

// Input implements loadgen.Source.
func (r randomSource) Input(i int) (loadgen.Input, error) {
	if i < 0 {
		return loadgen.Input{}, fmt.Errorf("%w: negative index %d", ErrDataset, i)
	}
	rng := rand.New(rand.NewPCG(uint64(r.s.Seed), uint64(i)))
	in, out := r.length(rng, r.s.InputLen), r.length(rng, r.s.OutputLen)
	text := corpus.Prose(uint64(r.s.Seed)^0x9e3779b97f4a7c15, uint64(i), in)
	return loadgen.Input{Messages: []corpus.Message{{Role: "user", Content: text}}, Text: text, MaxTokens: &out}, nil
}

func (r randomSource) length(rng *rand.Rand, n int) int {
	lo := int(math.Floor(float64(n) * (1 - r.s.RangeRatio)))
	hi := int(math.Ceil(float64(n) * (1 + r.s.RangeRatio)))
	lo = max(lo, 1)
	return lo + rng.IntN(hi-lo+1)
}

// Distinct implements loadgen.Source: random prompts never repeat.
func (randomSource) Distinct() int { return 0 }

// Describe implements loadgen.Source.
func (r randomSource) Describe() loadgen.SourceInfo {
	return loadgen.SourceInfo{Kind: KindRandom, Settings: r.s}
}
