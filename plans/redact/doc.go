// Package redact replaces secrets in text with "(sensitive)": in a line, in a
// stream cut anywhere (a child's output) and in each line a logger writes, and in
// the forms a secret takes inside JSON and Go-quoted strings. The plan's
// diagnostics, the engine's evidence and the CLI's logs all redact through it.
package redact
