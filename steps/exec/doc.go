// Package exec is the exec step type: it runs a command with a bounded time, keeps
// stdout and stderr as evidence, and turns a non-zero exit into a failure of the
// class the plan chooses. Campaigns use it for offline fixture and oracle checks
// and for preflight scripts.
package exec
