// Package promscrape fetches a target's Prometheus /metrics, keeps the raw bytes as
// evidence, parses them with prometheus/common/expfmt, and computes the counter
// deltas and gauge readings a block needs (running and waiting requests, tokens,
// prefix-cache queries and hits, finished and aborted requests).
//
// Metric names differ between serving engines: Names holds one engine's, and Preset
// gives the names vLLM and SGLang expose (each overridable by a target). A counter a
// scrape lacks is reported as missing, never as zero.
package promscrape
