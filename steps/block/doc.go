// Package block is the block step type: one benchmark block against a target. It
// checks the block's gates, scrapes native metrics before and after, sends exactly
// `requests` deterministic streaming requests at fixed `concurrency` through the
// loadgen client, and keeps requests.jsonl, result.json and both raw metric files as
// evidence. result.json names the rigor build that ran the block (StepContext.Rigor).
//
// Corpus protocol (seed 001, corpus.go): the block sends the corpus of its workload
// (with its own corpus_seed when a matrix sets one per cell), its concurrency cell and
// its lane: a pilot renders its own lane, disjoint from every measured corpus, and
// every other block of a cell sends that cell's main corpus, so a priming block sends
// exactly the prompts the repetitions will send. Request IDs are
// <campaign>/<step>/<cell>/<rep>/<index>; a re-attempt adds /a<attempt> before the
// index. PinnedInputs reports the corpus digest under "corpus <workload> s<seed>
// <cell> <lane>" so the engine holds every arm of a cell to the same prompts, and the
// target's protected_files, so the engine re-checks them before every block.
//
// Cache state (cache.go): each block expects primed, cold or shared (declared with
// expect_cache, or derived: primed when an earlier block of the arm's cell sent the
// corpus, shared for repeated prefixes, cold otherwise), may reset its target's prefix
// cache first (reset_cache, the target's cache_reset call), and records in result.json
// where its cache state came from (reset, fresh server, or carried over from the last
// block on the container, of this arm or another), the reuse the native counters and
// cached_tokens show, and a contradiction when they disagree with the expectation.
//
// Fixed output (fixture.go, seed 000's fixture): a workload may send min_tokens and
// ignore_eos (min_tokens = max_tokens with ignore_eos asks for an exact completion
// length) and assert every request's prompt and completion tokens
// (assert_prompt_tokens, assert_completion_tokens); a request whose usage differs is
// outcome assertion_failed. An attribute of the wrong type is a config failure.
//
// Outcome policy: a request-level failure (HTTP error, stream error, reasoning-only
// length exhaustion, a failed token-count assertion) is class "record": kept in its
// denominator, the campaign goes on. A target that does not accept a connection is "health". Missing terminal
// metadata, an incomplete block (hard bound), undrained requests, a failed gate, a
// failed cache reset or a restarted target stop the campaign.
//
// Identity held end to end (identity.go): before any request, whatever its gates,
// the target's container must run, not OOM-killed, and be the container, image and
// incarnation that the latest deploy, identity or restore and the previous block on
// the same endpoint recorded (engine.StepContext.History); on Docker the engine's
// oom, die and kill events since then count too. A mismatch is class identity
// (oom, restart for those events) and nothing is sent. The block's outputs carry
// the identity it measured and when it last confirmed it (checked_at), so the next
// block is held to it. A sim target with no container (a bare server in tests) has
// nothing to hold unless a record or an identity gate says it must.
//
// Agents (package agent): with agents = ["tcp://HOST:PORT", ...] the block is sent
// by those `rigor agent` processes instead of this one, through the same client code
// (loadClient: loadgen.Run here, agent.Fleet there). The step stays the one timing
// authority: it measures each agent's clock, holds them at a start barrier, hands
// out the slices and one start, and merges every record into requests.jsonl in one
// client's format; result.json's "agents" states each agent's clock offset and
// bound, client CPU, schedule lag and records. An agent that cannot be reached or
// bounded, saturates, lags or disappears is class agent, which stops the campaign;
// the records received are kept.
//
// Takeover detection (takeover.go): during the run every response names who
// answered (the target's identity_header, kept per request as served_by), and
// after it the block re-asks /v1/models and compares the native counters scraped
// before and after. A response from another incarnation, a changed model list or a
// counter that went backwards is class identity; the records stay, the block fails,
// and identity.json says what was seen.
package block
