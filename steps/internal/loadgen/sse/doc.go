// Package sse frames a Server-Sent Events byte stream into events, the way an
// OpenAI-compatible streaming client must (serving-wire.md §10).
//
// Why not bufio.Scanner: its default 64 KiB token limit fails on a single chunk that
// carries a long reasoning trace, and line iteration hides where one socket read ends.
// This reader reads raw bytes into a growing buffer, splits events on a blank line
// ("\n\n" or "\r\n\r\n"), and stamps every event with the monotonic time of the socket
// read that completed it, taken immediately after Read returns and before any parsing,
// so parse cost never shows up as server latency (STYLE habit 19).
//
// Invariants:
//   - An event is dispatched only when its terminating blank line has been read; at EOF
//     an event whose lines are complete but which lacks the blank line is returned with
//     Unterminated set, and a partial line is dropped and reported as
//     io.ErrUnexpectedEOF.
//   - Lines starting with ':' (comments, keep-alive pings) are skipped.
//   - Several "data:" lines in one event are joined with "\n" (the SSE rule).
//   - "data: [DONE]" ends the stream: Next returns it with Done set and never reads the
//     underlying reader again, because HTTP/2 servers may keep the stream open.
//   - An event with an "event:" field and no data is still dispatched (the SSE spec
//     drops it) so that a bare "event: error" cannot pass unnoticed.
//
// Out of scope: lone "\r" line endings (no serving stack emits them), the "retry:"
// field, reconnection.
package sse
