// Package corpus generates the deterministic prompts a measurement block sends.
//
// A prompt is a pure function of (kind, seed, nominal context, prefix mode, request
// index, repetition): no clock, no global random source, no map iteration. Two runs
// of the same frozen plan therefore send byte-identical prompts, and Spec.Hash plus
// ContentHash let the engine freeze the corpus and re-check it before every block.
//
// Sizing: nominal_context is a budget, not a measurement (seed 001: nominal 10240
// gave about 7.7K actual tokens). The generator makes the prompt exactly
// TargetTokens(nominal) = round(0.75 × nominal) tokens, where a token is the one
// notion in steps/internal/tokens (a whitespace-separated word), summed over the
// message contents. A real tokenizer and the chat template will count differently;
// the measured prompt_tokens from usage is what reports use.
//
// Prefix modes:
//   - unique: every (request index, repetition) pair opens with its own reference
//     tag and its own content, so its first block of tokens differs from every other
//     request of every repetition; the corpus itself can cause no prefix-cache reuse.
//   - repeated: the prompt depends on the request index only, so repetition r of
//     request i is byte-identical to repetition 0 of request i and can be served from
//     the prefix cache. Whether it was is for the native counters and cached_tokens
//     to say, never this package.
//
// Out of scope: real-tokenizer sizing, clamping the prompt to leave output headroom
// (the caller chooses nominal_context), natural-language quality.
package corpus
