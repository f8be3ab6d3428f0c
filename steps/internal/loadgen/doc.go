// Package loadgen is the measurement-grade streaming load generator behind the block
// step and `rigor bench`: it sends a fixed number of deterministic prompts (the
// workload's corpus, or any Source: package dataset's files and random prompts) to
// an OpenAI-compatible streaming endpoint and records, per request, monotonic client
// timestamps, usage, finish reason and an outcome class. A workload may ask for an
// exact output length (min_tokens, ignore_eos) and assert the prompt and completion
// token counts of every request (outcome assertion_failed).
//
// Invariants:
//   - The connection pool (Concurrency connections) is dialed before the block clock
//     starts; dials are recorded apart from request timings.
//   - Every request is timed from its scheduled send time, so client-side queueing
//     (a late dispatcher, a full concurrency ceiling) counts against the request
//     rather than vanishing (no coordinated omission). Schedule lag is recorded.
//   - Event times are stamped at socket read, before parsing (package sse).
//   - Monotonic time only inside the block; wall-clock UTC is taken as before/after
//     anchors.
//   - One accounting identity: every planned request gets exactly one Record and one
//     Outcome, including requests never sent because the block bound was hit. The
//     outcome table therefore always sums to Config.Requests, or, with a dispatch
//     window (Config.Duration), to the requests dispatched inside it.
//   - Every derived figure is defined once, in metrics.go, with its seed-000 formula;
//     the figures `rigor bench` compares with other clients (Figures: throughputs,
//     mean/std/min/max/percentiles, inter-token latency, goodput, achieved rate) are
//     computed from the records alone by those functions.
//   - The API key is sent only in the Authorization header. It is never logged,
//     written to records or results, or left in an error excerpt.
//   - With Config.IdentityHeader set, each record keeps that response header's
//     value (served_by): which stack answered. The client only records it; the
//     block step judges it.
//
// Out of scope: retries (nothing is ever retried; a failure stays in its population),
// HTTP/2 multiplexing (one HTTP/1.1 connection per concurrent request), native
// metrics and GPU telemetry (other packages), engine and plan types (this package
// must not import them).
package loadgen
