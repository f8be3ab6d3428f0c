// Package calibrate proves the load generator before its numbers are trusted. It runs
// the very client the block step uses (loadgen.Run) against the built-in simulator on
// loopback, configured for an exact token schedule (fixed time per output token, no
// jitter, no batch slope, exactly `tokens` content tokens per request), and compares
// what the client measured with what the server did: the server stamps each request
// when its handler is entered and each token-bearing chunk right after the write that
// carried it was flushed (sim.Config.OnChunk).
//
// Figures (per request, then p50/p99 of the absolute value):
//
//	TTFT error = (client ttfo_at − client scheduled_at) − (server first flush − server receive)
//	TPOT error = client capacity TPOT − (server last flush − server first flush) / (tokens − 1)
//
// plus the client's schedule lag and its CPU seconds per 1,000 streamed tokens. Both
// error terms are differences of durations each taken on one process's monotonic
// clock, so they need no clock alignment; the split into send-side and receive-side
// delay (reported too) uses the block's UTC anchor and holds on one machine only.
//
// Invariants: the client code path is loadgen.Run, unchanged and unwrapped; the
// simulator runs with jitter 0, so any spread is the client's or the loopback's. A
// step with max_ttft_error or max_tpot_error fails with class "gate" when the p99
// |error| exceeds the bound, and writes calibration.json either way.
//
// Out of scope: the CPU figure of the step and of `rigor calibrate` is the whole
// process's (client plus the in-process simulator), an upper bound of the client's
// share; the `make bench` fidelity benchmark runs the server as a separate process
// pinned to another core (internal/fidelityserver) and measures the client alone.
package calibrate
