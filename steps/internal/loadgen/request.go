package loadgen

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

// Finish reasons that mean the server ended the request without completing it.
const (
	finishAbort = "abort"
	finishError = "error"
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
	Object  json.RawMessage `json:"object"`
}

// nonEmpty reports whether a raw JSON value carries something: not absent, null,
// "", or an array or object with nothing but whitespace inside ([], { }).
func nonEmpty(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	switch string(s) {
	case "", "null", `""`:
		return false
	}
	if n := len(s); n >= 2 && (s[0] == '[' && s[n-1] == ']' || s[0] == '{' && s[n-1] == '}') {
		return len(bytes.TrimSpace(s[1:n-1])) > 0
	}
	return true
}

// worker is one connection and the buffers that read it, owned by one goroutine at
// a time. Everything in it is allocated before the block clock starts and reused by
// every request the worker sends.
type worker struct {
	conn *h1conn // nil: dial on the next request
	body body
	sse  *sse.Reader
	// With Config.RecordChunks: the current request's token chunk arrivals and token
	// counts, reused from request to request and copied into its record at the end.
	chunkAt  []float64
	chunkTok []int
	// head is the current response's status line and headers, copied out of the
	// connection's buffer.
	head []byte
}

func newWorker(c *h1conn) *worker {
	return &worker{conn: c, sse: sse.NewReader(nil, sse.WithReusedData(), sse.WithReadSize(connReadSize), sse.WithPreallocatedBuffer()), head: make([]byte, 0, 1<<10)}
}

func (w *worker) closeConn() {
	if w.conn != nil {
		w.conn.nc.Close()
		w.conn = nil
	}
}

// aLongTimeAgo is a deadline in the past: it interrupts a blocked read or write.
var aLongTimeAgo = time.Unix(1, 0)

// do sends request i, due at sched, on w's connection and returns its record.
func (r *runner) do(w *worker, i int, sched time.Time) Record {
	rec := r.base(i)
	rec.ScheduledAtMS = r.at(sched)
	if r.blockCtx.Err() != nil {
		rec.Outcome, rec.Error = Cancelled, "not sent: "+r.cancelReason()
		return rec
	}
	reqCtx, cancel := r.blockCtx, context.CancelFunc(func() {})
	if r.cfg.RequestTimeout > 0 {
		reqCtx, cancel = context.WithTimeout(r.blockCtx, r.cfg.RequestTimeout)
	}
	defer cancel()

	// fail classifies a failure: cancellation and timeout are decided by which
	// context ended, not by parsing the error text. The connection is closed: its
	// state is unknown.
	fail := func(o Outcome, msg string) Record {
		w.closeConn()
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

	// A connection idle for longer than warmMaxAge may have been closed by the
	// server, and one the server has closed without saying "Connection: close"
	// (a proxy's idle timeout, a server that closes after each response) has its
	// end waiting on the socket: a fresh one is dialled (and recorded) rather than
	// fail the request for a reason that has nothing to do with the server under
	// test. A POST is never sent twice: this is decided before the request is.
	if w.conn != nil && (time.Since(w.conn.lastUsed) >= warmMaxAge || closedByPeer(w.conn.nc)) {
		w.closeConn()
	}
	if w.conn == nil {
		c, err := r.pool.dial(reqCtx)
		if err != nil {
			rec.SendAtMS = r.at(time.Now())
			return fail(HTTPError, "transport: dial: "+err.Error())
		}
		w.conn = c
	}
	c := w.conn
	// Cancellation interrupts a blocked read or write through the deadline.
	stop := context.AfterFunc(reqCtx, func() { c.nc.SetDeadline(aLongTimeAgo) })
	defer stop()

	// The send stamp is taken right before the one write of the prepared request:
	// the client's TTFT runs from here, and the time since the schedule is lag.
	send := time.Now()
	rec.SendAtMS = r.at(send)
	lag := durMS(send.Sub(sched))
	rec.ScheduleLagMS = &lag
	c.reused = true
	if _, err := c.nc.Write(r.reqs[i]); err != nil {
		return fail(HTTPError, "transport: write: "+err.Error())
	}
	resp, err := c.readHead()
	if err != nil {
		return fail(HTTPError, "transport: "+err.Error())
	}
	// The head points into the connection's buffer, which reading the body
	// overwrites; the headers read after it (Retry-After, Content-Type) need a copy.
	w.head = append(w.head[:0], resp.head...)
	resp.head = w.head
	rec.HeadersAtMS = r.at(resp.headersAt)
	rec.ServedBy = headerValue(resp.head, r.cfg.IdentityHeader)
	rec.HTTPStatus = resp.status
	w.body.c = c
	w.body.reset(resp)
	if resp.status < 200 || resp.status > 299 {
		msg, _ := io.ReadAll(io.LimitReader(&w.body, 4*excerptLen))
		// The headers that say what to do next: when to retry, where the API moved.
		for _, h := range []string{"Retry-After", "Location"} {
			if v := headerValue(resp.head, h); v != "" {
				msg = fmt.Appendf(msg, " (%s: %s)", h, v)
			}
		}
		return fail(HTTPError, fmt.Sprintf("HTTP %d: %s", resp.status, bytes.TrimSpace(msg)))
	}

	outcome, msg, done := r.stream(w, &rec, resp.head)
	if !done {
		return fail(outcome, msg)
	}
	// [DONE] seen: the request's timing is final. Read the rest of the body (the
	// chunked terminator) so the connection can carry the next request, bounded by
	// drainLimit; a connection that cannot be drained is closed.
	if !w.body.Done() {
		c.nc.SetReadDeadline(time.Now().Add(drainLimit))
		io.Copy(io.Discard, io.LimitReader(&w.body, 1<<20))
	}
	if !stop() || !w.body.Done() || resp.close || c.r != c.w {
		w.closeConn()
	} else {
		c.nc.SetDeadline(time.Time{})
		c.lastUsed = time.Now()
	}
	rec.Outcome, rec.Error = outcome, msg
	return rec
}

// stream consumes the SSE body into rec. done reports a [DONE]-terminated stream,
// in which case outcome is final; otherwise outcome and msg describe the failure,
// still subject to the timeout/cancel reclassification in do.
func (r *runner) stream(w *worker, rec *Record, head []byte) (outcome Outcome, msg string, done bool) {
	sr := w.sse
	sr.Reset(&w.body)
	var (
		usage  *wireUsage
		finish *string
		// Per-chunk usage: the completion tokens reported so far, and whether every
		// token chunk reported usage (so each chunk's token count is known).
		reported   int
		perChunk   = true
		keepChunks = r.cfg.RecordChunks
	)
	w.chunkAt, w.chunkTok = w.chunkAt[:0], w.chunkTok[:0]
	defer func() {
		if keepChunks && len(w.chunkAt) > 0 {
			rec.TokenChunkAtMS = append([]float64(nil), w.chunkAt...)
			if perChunk {
				rec.TokenChunkTokens = append([]int(nil), w.chunkTok...)
			}
		}
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
				if rec.Chunks == 0 {
					// Nothing parsed as a chunk: say what the server sent instead.
					if ct := headerValue(head, "Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
						what := "Content-Type " + cmp.Or(ct, "(none)")
						if ce := headerValue(head, "Content-Encoding"); ce != "" {
							what += ", Content-Encoding " + ce
						}
						return StreamError, "stream ended before [DONE]: the response is " + what + ", not text/event-stream", false
					}
				}
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
			case finish != nil && (*finish == finishAbort || *finish == finishError):
				// The server ended the request itself: whatever streamed, it did not
				// complete. The stream was well-formed, so the connection is reusable.
				return StreamError, fmt.Sprintf("finish_reason %s: the server ended the request (%d token chunks streamed)", *finish, rec.TokenChunks), true
			case usage == nil && finish == nil:
				return MissingTerminalMetadata, "no usage and no finish_reason", true
			case usage == nil:
				return MissingTerminalMetadata, "no usage chunk (stream_options.include_usage ignored?)", true
			case finish == nil:
				return MissingTerminalMetadata, "no finish_reason", true
			}
			if msg := implausibleUsage(usage, rec.TokenChunks); msg != "" {
				return StreamError, msg, true
			}
			if msg := r.checkAssertions(usage); msg != "" {
				return AssertionFailed, msg, true
			}
			if rec.TTFTVisibleAtMS == nil {
				return NoVisibleOutput, fmt.Sprintf("no visible token (finish_reason %s, %d reasoning chunks)", *finish, rec.ReasoningChunks), true
			}
			return OK, "", true
		}
		c, err := parseChunk(ev.Data)
		if err != nil {
			rec.EndAtMS = r.at(ev.Received)
			return StreamError, "malformed chunk: " + err.Error() + ": " + string(ev.Data), false
		}
		rec.Chunks++
		if c.err != nil {
			rec.EndAtMS = r.at(ev.Received)
			return StreamError, "in-band error: " + string(c.err), false
		}
		// A finish_reason of abort or error ended the choice: a later one does not
		// make it complete.
		if c.finish != nil && (finish == nil || *finish != finishAbort && *finish != finishError) {
			finish = c.finish
		}
		visible, reasoning := c.visible, c.reasoning
		// Role-only and usage-only chunks carry no token: they set neither TTFO
		// nor last_token.
		if visible || reasoning {
			rec.TokenChunks++
			at := r.at(ev.Received)
			if rec.TTFOAtMS == nil {
				rec.TTFOAtMS = at
			}
			rec.LastTokenAtMS = at
			if keepChunks {
				// A chunk's tokens are those the usage reported since the previous
				// token chunk: tokens a server held back in an empty chunk (a
				// detokenizer holding a partial character) arrive with this text.
				w.chunkAt = append(w.chunkAt, *at)
				if c.usage != nil {
					w.chunkTok = append(w.chunkTok, c.usage.CompletionTokens-reported)
					reported = c.usage.CompletionTokens
				} else {
					perChunk = false
				}
			}
		}
		if c.usage != nil {
			usage = c.usage
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

// maxPlausibleTokens bounds one request's token counts: no request prefills or
// generates a billion tokens, and sums of counts below it cannot overflow.
const maxPlausibleTokens = 1_000_000_000

// implausibleUsage describes a usage that the stream itself contradicts ("" when it
// is plausible): a negative or absurd count, or fewer completion tokens than the
// chunks that carried tokens, since every such chunk carries at least one. Its
// figures (TPOT, ITL, throughput) would be made up, so the request does not count.
func implausibleUsage(u *wireUsage, tokenChunks int) string {
	bad := func(name string, n *int) string {
		if n != nil && (*n < 0 || *n > maxPlausibleTokens) {
			return fmt.Sprintf("implausible usage: %s %d", name, *n)
		}
		return ""
	}
	var cached, reasoning *int
	if d := u.PromptTokensDetails; d != nil {
		cached = d.CachedTokens
	}
	if d := u.CompletionTokensDetails; d != nil {
		reasoning = d.ReasoningTokens
	}
	if msg := cmp.Or(bad("prompt_tokens", &u.PromptTokens), bad("completion_tokens", &u.CompletionTokens),
		bad("prompt_tokens_details.cached_tokens", cached), bad("completion_tokens_details.reasoning_tokens", reasoning)); msg != "" {
		return msg
	}
	if u.CompletionTokens < tokenChunks {
		return fmt.Sprintf("implausible usage: completion_tokens %d, but %d chunks carried tokens", u.CompletionTokens, tokenChunks)
	}
	return ""
}

// checkAssertions compares a completed stream's usage with the workload's
// assertions and describes every mismatch ("" when all hold).
func (r *runner) checkAssertions(u *wireUsage) string {
	w := r.cfg.Workload
	var out []string
	if a := w.AssertPromptTokens; a != nil && u.PromptTokens != *a {
		out = append(out, fmt.Sprintf("usage.prompt_tokens %d, asserted %d", u.PromptTokens, *a))
	}
	if a := w.AssertCompletionTokens; a != nil && u.CompletionTokens != *a {
		out = append(out, fmt.Sprintf("usage.completion_tokens %d, asserted %d", u.CompletionTokens, *a))
	}
	return strings.Join(out, "; ")
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
