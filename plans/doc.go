// Package plans is rigor's campaign language: it parses HCL campaign files, decodes
// every block type, evaluates expressions with go-cty, expands for_each and matrix
// blocks into step instances, turns references into dependencies, and produces the
// canonical plan JSON whose sha256 freezes a campaign.
//
// Invariants:
//   - Every problem is an hcl.Diagnostic with a Subject range; loading reports all of
//     them at once rather than stopping at the first.
//   - A value a step produces is a cty unknown, marked with the address of the step
//     that will produce it, until that step has run. Nothing unknown is ever hashed.
//   - Sensitive values are marked and never appear in canonical JSON or hashes; a
//     value derived from one stays marked (through functions, templates, data
//     blocks and for_each values). A sensitive value in an argument a step type
//     declares public (PublicArguments: command lines, build args, preflights) is
//     a load-time diagnostic at the reference that brings it in.
//   - No input can make parsing recurse without bound: files and variable values
//     are lexed first and refused beyond MaxNesting levels (limits.go). Files over
//     512 KB are parsed in pieces cut between top-level blocks (parse.go); a piece
//     with an error sends the file to hclsyntax whole, so diagnostics are its own.
//   - The plan hash follows meaning, not text: every known value is in the
//     canonical configuration, and an expression whose value waits for a step is
//     there as a digest of its canonical form (digest.go, canonexpr.go), per
//     instance. Comments and layout change nothing; adding an arm, a cell or a
//     repetition changes no existing instance.
//   - Every value of a host, target, workload or gate is typed, range- and
//     enum-checked (types.data.go, schema.go) against the names and parsers the
//     code that consumes it hands over (Vocabulary, from the step types); plans
//     keeps no copy of those lists. A value that waits for a step is checked by
//     Instance.Evaluate once known, before the step that reads it starts.
//   - A step argument that names a data block (DataReferrer) and a matrix's arm
//     targets, workloads and gates hold a declared block of that kind, compared by
//     value (datarefs.go); a step's enumerations are checked by its own schema
//     (OneOf with the step's list); a condition is evaluated at load with every
//     outcome unknown (condition.go), so a field no outcome has or a value that is
//     not a bool never waits for the outage to surface.
//   - Output is deterministic: instances keep declaration order, maps are sorted;
//     a randomized matrix order is drawn from a seed the plan records, with a
//     generator specified here (order.go), so no Go release changes it.
//   - A decision rule names arms and cells of one measured matrix, and at most as
//     many matched repetitions as it runs; they are checked when the plan loads, so
//     the report never meets a rule it cannot place.
//   - Meta-arguments are written once, as meta-arguments; a step type whose schema
//     names one (the block's phase) receives its value in its configuration too.
//   - count = N repeats a step (each for_each key) as instances KEY/1..KEY/N (1..N
//     without for_each), in that order; sequential = true makes each instance start
//     after the one before it, whatever its outcome (an After edge, never a
//     dependency). Both are known at plan time.
//
// Out of scope: running anything. The engine executes instances; step types supply
// their own configuration schemas through the StepType interface.
package plans
