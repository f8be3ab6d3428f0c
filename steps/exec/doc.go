// Package exec is the exec step type: it runs a command with a bounded time, keeps
// stdout and stderr as evidence, and turns a non-zero exit into a failure of the
// class the plan chooses. Campaigns use it for offline fixture and oracle checks
// and for preflight scripts.
//
// The command gets PATH, HOME, LANG and TMPDIR from rigor's environment and the
// step's env, nothing else (steps/internal/child): a secret reaches it only as
// env = { API_KEY = var.api_key }, never on the command line, which the plan
// refuses (PublicArguments). stdout.txt and stderr.txt are kept with the step's
// secrets redacted, stdout_sha256 is the hash of the kept file, and a non-zero exit
// quotes the last (redacted) stderr line.
package exec
