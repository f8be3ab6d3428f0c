// Package schemas holds the JSON Schemas of every file rigor writes (journal
// records, block results, request records, evidence summaries, manifests, trace
// captures, capture overlaps), embedded so the binary and the tests validate against
// the same bytes.
package schemas
