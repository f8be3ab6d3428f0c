// Package schemas holds the JSON Schemas of the files rigor writes for other tools to
// read: journal records, block results, request records, report summaries,
// manifests, trace captures, capture overlaps, client calibrations and bench sweeps.
// They are embedded so the binary and the tests validate against the same bytes.
// Other evidence files (a gate's checks, GPU samples, a restore's receipt, frozen
// values) have no schema of their own.
package schemas
