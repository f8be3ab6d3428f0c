package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rigor-bench/rigor/steps/internal/loadgen/sse"
)

const (
	// excerptLen bounds the error text kept per record: enough to recognise the
	// failure, small enough that a 2 MB error body cannot bloat requests.jsonl.
	excerptLen = 300
	// drainLimit bounds the wait for the end of the HTTP body after [DONE]. Reading
	// to EOF lets the transport reuse the connection; a server that keeps the stream
	// open after [DONE] costs at most this, after the request's end stamp.
	drainLimit = 250 * time.Millisecond
)

// wire types: only the fields the measurement needs. Token-bearing fields are kept
// raw so that a string, an array of parts or an object all count as output when
// non-empty, instead of failing the parse.
type wireDelta struct {
	Content          json.RawMessage `json:"content"`
	Reasoning        json.RawMessage `json:"reasoning"`
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	ToolCalls        json.RawMessage `json:"tool_calls"`
}

type wireChoice struct {
	Delta        wireDelta       `json:"delta"`
	Text         json.RawMessage `json:"text"` // /v1/completions
	FinishReason *string         `json:"finish_reason"`
}

type wireUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens *int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireChunk struct {
	Choices []wireChoice    `json:"choices"`
	Usage   *wireUsage      `json:"usage"`
	Error   json.RawMessage `json:"error"`
}

// nonEmpty reports whether a raw JSON value carries something: not absent, null,
// "", [] or {}.
func nonEmpty(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	switch string(s) {
	case "", "null", `""`, "[]", "{}":
		return false
	}
	return true
}

// do sends request i, due at sched, and returns its record.
func (r *runner) do(i int, sched time.Time) Record {
	rec := r.base(i)
	rec.ScheduledAtMS = r.at(sched)
	if r.blockCtx.Err() != nil {
		rec.Outcome, rec.Error = Cancelled, "not sent: "+r.cancelReason()
		return rec
	}
	// reqCtx is always cancellable: the post-[DONE] drain needs to abort it even
	// when there is no per-request timeout.
	reqCtx, cancel := context.WithCancel(r.blockCtx)
	if r.cfg.RequestTimeout > 0 {
		reqCtx, cancel = context.WithTimeout(r.blockCtx, r.cfg.RequestTimeout)
	}
	defer cancel()

	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, r.url, bytes.NewReader(r.bodies[i]))
	if err != nil { // unreachable with a validated URL; kept so nothing is silent
		rec.Outcome, rec.Error = HTTPError, r.excerpt(err.Error())
		return rec
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("X-Request-Id", rec.ID)
	if r.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+string(r.cfg.APIKey))
	}

	// fail classifies a failure: cancellation and timeout are decided by which
	// context ended, not by parsing the error text.
	fail := func(o Outcome, msg string) Record {
		if r.blockCtx.Err() != nil {
			o, msg = Cancelled, r.cancelReason()+": "+msg
		} else if reqCtx.Err() != nil {
			o, msg = Timeout, fmt.Sprintf("request timeout %s: %s", r.cfg.RequestTimeout, msg)
		}
		if rec.EndAtMS == nil {
			rec.EndAtMS = r.at(time.Now())
		}
		rec.Outcome, rec.Error = o, r.excerpt(msg)
		return rec
	}

	send := time.Now()
	rec.SendAtMS = r.at(send)
	lag := durMS(send.Sub(sched))
	rec.ScheduleLagMS = &lag
	resp, err := r.client.Do(req)
	if err != nil {
		return fail(HTTPError, "transport: "+err.Error())
	}
	rec.HeadersAtMS = r.at(time.Now())
	rec.HTTPStatus = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4*excerptLen))
		resp.Body.Close()
		return fail(HTTPError, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, body))
	}

	outcome, msg, done := r.stream(resp.Body, &rec)
	if !done {
		resp.Body.Close()
		return fail(outcome, msg)
	}
	// [DONE] seen: the request's timing is final. Read the chunked terminator so
	// the connection goes back to the pool, bounded by drainLimit.
	t := time.AfterFunc(drainLimit, cancel)
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	t.Stop()
	resp.Body.Close()
	rec.Outcome, rec.Error = outcome, msg
	return rec
}

// stream consumes the SSE body into rec. done reports a [DONE]-terminated stream,
// in which case outcome is final; otherwise outcome and msg describe the failure,
// still subject to the timeout/cancel reclassification in do.
func (r *runner) stream(body io.Reader, rec *Record) (outcome Outcome, msg string, done bool) {
	sr := sse.NewReader(body)
	var (
		usage  *wireUsage
		finish *string
	)
	defer func() {
		if t := sr.FirstRead(); !t.IsZero() {
			rec.FirstByteAtMS = r.at(t)
		}
		if usage != nil {
			u := &Usage{PromptTokens: usage.PromptTokens, CompletionTokens: usage.CompletionTokens}
			if usage.PromptTokensDetails != nil {
				u.CachedTokens = usage.PromptTokensDetails.CachedTokens
			}
			if usage.CompletionTokensDetails != nil {
				u.ReasoningTokens = usage.CompletionTokensDetails.ReasoningTokens
			}
			rec.Usage = u
		}
		rec.FinishReason = finish
	}()
	for {
		ev, err := sr.Next()
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return StreamError, "stream ended before [DONE]", false
			}
			return StreamError, "stream read: " + err.Error(), false
		}
		switch ev.Type {
		case "", "message":
		case "error":
			rec.EndAtMS = r.at(ev.Received)
			return StreamError, "event: error: " + string(ev.Data), false
		default:
			continue // unknown event types carry no chunk
		}
		if ev.Done {
			rec.EndAtMS = r.at(ev.Received)
			switch {
			case usage == nil && finish == nil:
				return MissingTerminalMetadata, "no usage and no finish_reason", true
			case usage == nil:
				return MissingTerminalMetadata, "no usage chunk (stream_options.include_usage ignored?)", true
			case finish == nil:
				return MissingTerminalMetadata, "no finish_reason", true
			case rec.TTFTVisibleAtMS == nil:
				return NoVisibleOutput, fmt.Sprintf("no visible token (finish_reason %s, %d reasoning chunks)", *finish, rec.ReasoningChunks), true
			}
			return OK, "", true
		}
		var c wireChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			rec.EndAtMS = r.at(ev.Received)
			return StreamError, "malformed chunk: " + err.Error() + ": " + string(ev.Data), false
		}
		rec.Chunks++
		if nonEmpty(c.Error) {
			rec.EndAtMS = r.at(ev.Received)
			return StreamError, "in-band error: " + string(c.Error), false
		}
		if c.Usage != nil {
			usage = c.Usage
		}
		var visible, reasoning bool
		for _, ch := range c.Choices {
			if nonEmpty(ch.Delta.Content) || nonEmpty(ch.Delta.ToolCalls) || nonEmpty(ch.Text) {
				visible = true
			}
			if nonEmpty(ch.Delta.Reasoning) || nonEmpty(ch.Delta.ReasoningContent) {
				reasoning = true
			}
			if ch.FinishReason != nil && *ch.FinishReason != "" {
				f := *ch.FinishReason
				finish = &f
			}
		}
		// Role-only and usage-only chunks carry no token: they set neither TTFO
		// nor last_token.
		if visible || reasoning {
			at := r.at(ev.Received)
			if rec.TTFOAtMS == nil {
				rec.TTFOAtMS = at
			}
			rec.LastTokenAtMS = at
		}
		if visible {
			rec.ContentChunks++
			if rec.TTFTVisibleAtMS == nil {
				rec.TTFTVisibleAtMS = r.at(ev.Received)
			}
		}
		if reasoning {
			rec.ReasoningChunks++
		}
	}
}

// excerpt shortens msg and removes the API key, whatever echoed it.
func (r *runner) excerpt(msg string) string {
	if k := string(r.cfg.APIKey); k != "" {
		msg = strings.ReplaceAll(msg, k, redacted)
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > excerptLen {
		cut := excerptLen
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}
