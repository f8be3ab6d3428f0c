// Package promscrape fetches a target's Prometheus /metrics, keeps the raw bytes as
// evidence, parses them with prometheus/common/expfmt, and computes the counter
// deltas and gauge readings a block needs (running and waiting requests, tokens,
// prefix-cache queries and hits, request successes by finished_reason).
package promscrape
