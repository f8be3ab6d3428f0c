package loadgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// Outcome is the class of one request. Every planned request has exactly one.
type Outcome string

// The outcome classes, in report order.
const (
	// OK: 2xx, stream ended with [DONE], usage and finish_reason present, the
	// finish_reason is not "abort" or "error", and at least one visible (content or
	// tool_calls) token arrived.
	OK Outcome = "ok"
	// NoVisibleOutput: complete stream without a visible token, e.g. finish_reason
	// "length" after reasoning only.
	NoVisibleOutput Outcome = "no_visible_output"
	// HTTPError: no 2xx response; http_status is the code, or 0 when the exchange
	// failed before any response (connection refused or reset).
	HTTPError Outcome = "http_error"
	// StreamError: after a 2xx, an in-band {"error":…} object, an "event: error", a
	// malformed chunk, a stream that ended or broke before [DONE] (naming the
	// Content-Type when nothing in it was SSE), a stream the server ended with
	// finish_reason "abort" or "error" (vLLM's request_success counter labels such
	// requests so; they did not complete; a later finish_reason does not undo it),
	// or a usage the stream contradicts: a negative or absurd count, or fewer
	// completion tokens than chunks that carried tokens.
	StreamError Outcome = "stream_error"
	// Timeout: the per-request timeout fired.
	Timeout Outcome = "timeout"
	// MissingTerminalMetadata: [DONE] arrived but usage or finish_reason did not.
	MissingTerminalMetadata Outcome = "missing_terminal_metadata"
	// Cancelled: the block bound was hit or the caller cancelled, while the request
	// was in flight or before it was sent.
	Cancelled Outcome = "cancelled"
	// AssertionFailed: a stream that completed (ok or no_visible_output otherwise)
	// whose usage contradicts the workload's assertion on prompt or completion
	// tokens (seed 000's fixed-output fixture: exact 1024-token completions, a
	// 7037-token prompt). It is a failure kept in the denominator.
	AssertionFailed Outcome = "assertion_failed"
)

// Outcomes returns every class in report order.
func Outcomes() []Outcome {
	return []Outcome{OK, NoVisibleOutput, HTTPError, StreamError, Timeout, MissingTerminalMetadata, Cancelled, AssertionFailed}
}

// Usage is the final usage chunk. ReasoningTokens and CachedTokens are null when the
// server did not report them: "not reported" must not read as "zero" (vLLM needs
// --enable-prompt-tokens-details for cached_tokens; issue #50895 for reasoning).
// CompletionTokens already includes reasoning tokens.
type Usage struct {
	PromptTokens     int  `json:"prompt_tokens"`
	CompletionTokens int  `json:"completion_tokens"`
	ReasoningTokens  *int `json:"reasoning_tokens"`
	CachedTokens     *int `json:"cached_tokens"`
}

// Record is one line of requests.jsonl. Every *_at_ms field is an offset in
// milliseconds (microsecond resolution) from the block's monotonic origin, null when
// the moment never happened.
type Record struct {
	ID             string `json:"id"`
	Index          int    `json:"index"`
	Repetition     int    `json:"repetition"`
	Concurrency    int    `json:"concurrency"`
	NominalContext int    `json:"nominal_context"`

	ScheduledAtMS   *float64 `json:"scheduled_at_ms"`    // when the request was due
	SendAtMS        *float64 `json:"send_at_ms"`         // just before the request was handed to the transport
	HeadersAtMS     *float64 `json:"headers_at_ms"`      // response status and headers parsed
	FirstByteAtMS   *float64 `json:"first_byte_at_ms"`   // first response-body read
	TTFOAtMS        *float64 `json:"ttfo_at_ms"`         // first output token of any kind
	TTFTVisibleAtMS *float64 `json:"ttft_visible_at_ms"` // first visible content or tool_calls
	LastTokenAtMS   *float64 `json:"last_token_at_ms"`   // last token-bearing chunk: where E2E ends
	EndAtMS         *float64 `json:"end_at_ms"`          // end of stream: [DONE], failure, or cancellation
	ScheduleLagMS   *float64 `json:"schedule_lag_ms"`    // send − scheduled

	HTTPStatus      int     `json:"http_status"` // 0 when no response
	Usage           *Usage  `json:"usage"`
	FinishReason    *string `json:"finish_reason"`
	Chunks          int     `json:"chunks"`           // parsed data events, [DONE] excluded
	ContentChunks   int     `json:"content_chunks"`   // chunks with visible content or tool_calls
	ReasoningChunks int     `json:"reasoning_chunks"` // chunks with reasoning or reasoning_content
	TokenChunks     int     `json:"token_chunks"`     // chunks with an output token of any kind
	Outcome         Outcome `json:"outcome"`
	Error           string  `json:"error,omitempty"` // short excerpt, API key redacted
	// ServedBy is the value of Config.IdentityHeader in the response ("" when absent
	// or not asked for): which stack answered.
	ServedBy string `json:"served_by,omitempty"`

	// With Config.RecordChunks: TokenChunkAtMS is the arrival of every token chunk
	// (socket read stamp, block offset), in order; TokenChunkTokens is the number of
	// completion tokens each carried, from per-chunk usage (stream_options
	// continuous_usage_stats), present only when every token chunk reported usage.
	TokenChunkAtMS   []float64 `json:"token_chunk_at_ms,omitempty"`
	TokenChunkTokens []int     `json:"token_chunk_tokens,omitempty"`
}

// ReadRecords parses requests.jsonl. Lines can be long (a record is small, but the
// error excerpt is bounded anyway); blank lines are skipped.
func ReadRecords(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("requests.jsonl line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	return out, sc.Err()
}
