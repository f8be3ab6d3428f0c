// Package engine executes a frozen plan: it schedules step instances in a stable
// topological order, hashes every step's inputs before it runs, writes an
// append-only, fsynced, hash-chained journal, applies failure-class policy, keeps
// the outage clock, and always runs the always-steps (restore) last.
//
// Invariants:
//   - No evidence in the state directory is ever rewritten, only added. What is
//     rewritten is derived from it: manifest.json (an index rebuilt from the
//     journal) and report/ (rewritten by `rigor report`).
//   - Every file the engine writes into a state directory is accounted for by a
//     journal record with its size and sha256 (plan_frozen: plan/; amendment: its
//     files; step_end: the attempt's files; journal_repaired: the torn last line
//     of a journal, which an apply moves to repairs/ before it goes on). The rest
//     is manifest.json (derived from the journal), signatures/ (which sign the
//     journal's head), the lock, report/ (derived by `rigor report`), and the
//     process-group records a step whose attempt directory could not be made
//     leaves at the root while its command runs (procgroup).
//     VerifyState checks all of it and reports anything else as a stray.
//   - A failed attempt is never re-run, except an always-step's (restore), which
//     every later apply runs again, first, as a new attempt. After a stop-class
//     failure, an interrupt or a hold by the caller's gate (Options.Gate) only
//     always-steps start, and every other step is recorded blocked with the reason;
//     a step deferred because its bound does not fit in the outage left holds back
//     only what depends on it (steps that fit and do not depend on it still run).
//   - A resumed apply checks every completed step's inputs before its apply_start:
//     its files as they are now, its configuration and dependencies with the
//     dependencies' outputs as the step saw them (those of the attempt that had
//     succeeded when it started; a deploy run again after a restore has new
//     outputs, and the steps before it were measured against the old). A change
//     refuses the apply, which journals nothing of it (a torn last line it moved
//     aside first is journalled all the same).
//   - After a crash, the next apply kills the process groups the dead apply's
//     steps left running, from the records its attempts hold (procgroup), before
//     it hashes their evidence or starts anything.
//   - A campaign is frozen only into a new or empty state directory, or over the
//     files an interrupted freeze left (checkUnfrozen).
//   - One apply per state directory at a time (flock).
//   - The plan_frozen record and every apply_start record name the rigor build
//     that wrote them (Options.Rigor, from cmd/rigor's buildVersion), and steps
//     get it as StepContext.Rigor for the results they write.
//   - A step sees its configuration unmarked, with the strings that were marked
//     sensitive listed in StepContext.Secrets. Redacting them is the step's duty for
//     what it keeps and for its result message, which the journal records as it is
//     (secrets.go: StepContext.Redacted, through plans/redact's Redactor).
//   - Amendments are classified from the canonical plan JSON and the journal alone
//     (prereg.go): a change to a step that started is never recorded; a change that
//     shapes the analysis (the decision rule, the outage, the frozen inputs, a
//     matrix's blocks) after a measured block it affects started is recorded only
//     when asked for as post-hoc, and says so; a closed campaign takes none.
//
// The engine knows steps only through the Step interface; it never imports a
// concrete step package.
package engine
