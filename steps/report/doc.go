// Package report turns a state directory into the documents a reviewer reads:
// report/summary.json (one row per matrix cell, seed 003's shape, schema
// schemas/summary.schema.json), report/report.md and report/report.html (seed 002's
// shape) and report/charts/*.png|svg.
//
// Report is not a step type. It lives under steps/ because it reads the evidence
// that step packages write (requests.jsonl and native-deltas.json of steps/block,
// receipt.json of steps/restore, identity outputs of steps/deploy) and it uses
// steps/internal/loadgen's record type and metric definitions, so every figure is
// computed by the same code that defines it.
//
// Invariants:
//   - Nothing is typed by hand: every figure comes from the state directory, and the
//     same state directory always gives byte-identical summary.json and report.md
//     (no clock is read, maps are sorted before they are emitted).
//   - Cells come from the effective plan (plan/plan.json with its amendments): every
//     matrix cell (arm × concurrency; the matrix fixes workload and context) has a row,
//     run or not, with a disposition: accepted, failed, blocked, deferred or pending.
//   - A measured block a trace or nsys capture ran during (its overlap.json, or its
//     UTC window against the block's anchors on the same container) is observed,
//     not clean data (observed.go): it never enters a verdict or a drift figure; it
//     leaves its cell's figures when the cell has unobserved blocks, and otherwise
//     the cell's figures are labelled as taken under observation.
//   - Priming blocks never enter a cell's statistics. Every failed request stays in
//     its denominator. A cell with any failed request or failed block is withheld
//     from ranking and from the decision rule, and carries no headline figure.
//   - Every attempt of a block is in its cell's population: an attempt a crash or a
//     signal interrupted keeps its records, and the requests it declared but never
//     recorded count as cancelled failures; a re-attempt is a retry shown beside the
//     cell, never a replacement.
//   - The verdict (decision.go) pairs blocks by repetition: the candidate against the
//     mean of the incumbent arms before and after it (ABBA), with a 95% interval from
//     package stats. Drift beyond the rule's bound, a failed request in a compared or
//     drift-control cell, an invalid block (validity.go) or an uncertified
//     percentile makes a comparison ineligible. Energy (energy.go) integrates each
//     block's GPU samples over its window.
//   - brief.go gives the verdict in a few lines (Brief) for the end of `plan apply`
//     and for `rigor status`: it is the Verdict Build computes for summary.json, never
//     a second computation, so the three agree.
//   - requests.jsonl is streamed: only the per-request figures the report needs are
//     kept (float64 per figure per visible success), so a million records fit well
//     under a GiB (BenchmarkReport1M, in make bench: 394 MiB peak RSS and 1.6 s on a
//     2-core machine). Percentiles are exact (type 7, loadgen.Percentile).
//   - Closure lists every outage window of the journal (outage.go): a held campaign
//     continued later has several, each with its opener, closer, time and budget.
//   - The cache (cache.go): each cell says what its measured blocks expected, how
//     many the counters contradicted, where its first block found the cache, and
//     every attempt that started from another arm's cache, naming the arm and block;
//     priming blocks' contradictions are listed apart, never counted as measured.
//   - Same work for every arm (corpus.go): each block row carries the corpus digest
//     its result.json recorded, and each concurrency cell of a matrix says whether
//     every arm sent the identical corpus, repetition by repetition (seed 003's
//     prompt_reconstruction). A recorded difference between compared arms makes the
//     comparison ineligible; evidence without digests establishes nothing.
//   - Each artefact read is hashed while it is read; a hash that differs from the
//     journal's is reported, never silently used.
//   - The first screen (firstscreen.go, before any heading) says what was compared
//     and what decided it; the engine and model come from the blocks' result.json,
//     the profile and time scale from the plan. Charts (charts.go) are figures of
//     small multiples laid out by measuring their text, so nothing is clipped, and an
//     arm has one colour in all of them. Tables print tok/s whole and mark a
//     descriptive percentile with descMark, explained once under its table.
//
// GPU telemetry is read from gpu.jsonl beside each block, one JSON object per sample
// and device. Recognised keys: "device" or "index" or "uuid"; "utc" or "time" (RFC
// 3339); "power_w"; "power_limit_w" or "enforced_power_limit_w"; "temperature_c";
// "sm_clock_mhz"; "mem_clock_mhz"; "driver" or "driver_version"; "name". Absent keys
// are left out of the observations, never read as zero.
//
// Diagnostics (diagnostics.go) cover the plan's trace and nsys captures: the
// analysis seed 000 asks for (steps/trace/analyze.go, steps/nsys/analyze.go), one
// container incarnation pooled per target, overlap.json shown beside each capture and
// checked against its windows, and the observer-overhead comparison of a profiled
// block with its named control. Every capture file read is hashed against the
// journal.
//
// Out of scope: re-running or repairing anything; statistical tests beyond the
// pre-registered decision rule (no p-values, no multiple-comparison correction);
// randomized or counterbalanced arm orders; attributing a trace sample or a kernel to
// an HTTP request, which the evidence cannot support.
package report
