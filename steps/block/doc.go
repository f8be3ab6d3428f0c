// Package block is the block step type: one benchmark block against a target. It
// checks the block's gates, scrapes native metrics before and after, sends exactly
// `requests` deterministic streaming requests at fixed `concurrency` through the
// loadgen client, and keeps requests.jsonl, result.json and both raw metric files as
// evidence.
//
// Outcome policy: a request-level failure (HTTP error, stream error, reasoning-only
// length exhaustion) is class "record": kept in its denominator, the campaign goes
// on. Missing terminal metadata, an incomplete block (hard bound), undrained
// requests, a failed gate or a restarted target stop the campaign.
package block
