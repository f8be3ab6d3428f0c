// Package trace is the trace step type: one bounded scheduler-trace capture from a
// target's instrumentation endpoint (seed 001: a 1 s capture under load, then short
// captures per concurrency), kept raw and judged by seed 000's rules.
//
// The step sends `method` (default POST) to `url` (default the target's endpoint +
// /debug/scheduler-trace) with ?duration=<duration>, stores the answer byte for byte
// as raw.json, validates it against schemas/trace-capture.schema.json, and then checks
// what a schema cannot: every declared rank present in the capture and in every
// sample, zero dropped samples, no overflow and no sequence gap, graph and rank
// references that resolve, before/after clock anchors (monotonic + UTC) that bound the
// window and agree with each other, and the same container incarnation before and
// after the capture (from the capture itself, and for runtime = "sim" targets from the
// container runtime too). capture.json records the request, the client's own anchors
// and the incarnations; validation.json records every check.
//
// Classes: a changed incarnation is "restart"; a drop, an overflow, a missing rank, a
// broken reference or an anchor that does not bound the window is
// "instrumentation_incomplete", and for drops and overflows the message says that a
// shorter window is needed. The capture is never repaired or trimmed.
//
// Analysis (analyze.go) is read by the report, not run by the step: Parse reads a
// kept capture, Window places it on UTC with the alignment bound of its two anchors,
// and Analyze pools captures of one container incarnation by seed 000's rules
// (samples grouped by graph index/kind/shape, scheduled lanes and the queued flag;
// per-rank intervals and their maximum, never summed; retained_ns against the
// max-rank GPU interval when queued, else against max(max-rank, host wall); the
// prior-observation age selected_at_ns − selection.observed_at_ns, freshness and
// refresh origin). Gaps lists what a trace cannot say.
//
// Out of scope: choosing which captures to pool (the report keeps one incarnation
// per target) and attributing samples to HTTP requests, which the trace cannot do.
package trace
