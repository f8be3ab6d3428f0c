// Package corpus renders the deterministic prompts a measurement block sends.
//
// A corpus is identified by an ID: the workload's corpus setting (kind, seed, nominal
// context, prefix mode, cold or not), the concurrency cell ("c4") and the lane (main,
// or pilot). Prompt i of an ID is a pure function of (ID, i): no clock, no global
// random source, no map iteration. Two runs of the same frozen plan therefore send
// byte-identical prompts, and Digest (sha256 over the prompts a block sends) lets the
// engine pin a cell's corpus and hold every block of the cell to it.
//
// The protocol this serves is seed 001's: a priming block sends a cell's whole corpus
// once, then every measured repetition of the cell sends that same corpus again. The
// corpus does not depend on the repetition, so a server whose prefix cache still holds
// the primed prompts can serve the repetitions from it. Different cells and lanes are
// different corpora: C4 never replays C1's prompts, and no measured block sends a
// prompt the pilot sent.
//
// Prefix modes, within one corpus:
//   - unique: every prompt opens with its own reference tag (corpus and index) and its
//     own content, so no two prompts of the corpus, nor of any other corpus, share a
//     first token block. Reuse can then only come from sending the same corpus again.
//   - repeated: every prompt opens with the same system message and document (all but
//     RepeatedDistinctShare of it) and ends with its own note, so the requests of a
//     block share that prefix with each other.
//
// A cold lane (Spec.Fresh, the workload's fresh_prefixes) renders new prompts for every
// repetition: the repetition joins the ID, so nothing a previous repetition sent is
// sent again (seed 001: "cold means fresh prefix").
//
// Whether a server did reuse a prefix is for its native counters and cached_tokens to
// say; this package only decides what is sent.
//
// Sizing: nominal_context is a budget, not a measurement (seed 001: nominal 10240
// gave about 7.7K actual tokens). The generator makes the prompt exactly
// TargetTokens(nominal) = round(0.75 × nominal) tokens, where a token is the one
// notion in steps/internal/tokens (a whitespace-separated word), summed over the
// message contents. A real tokenizer and the chat template will count differently;
// the measured prompt_tokens from usage is what reports use.
//
// Out of scope: real-tokenizer sizing, clamping the prompt to leave output headroom
// (the caller chooses nominal_context), natural-language quality, corpora read from
// files.
package corpus
