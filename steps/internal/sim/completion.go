package sim

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxCoalescedBytes bounds how much already-due output is buffered before a write.
const maxCoalescedBytes = 32 << 10

// errGone means the client or the server went away mid-request.
var errGone = errors.New("request abandoned")

// exchange is one completion request in flight: its engine job, its schedule and, when
// streaming, the bytes waiting for the next flush.
type exchange struct {
	s       *Server
	ctx     context.Context
	w       http.ResponseWriter
	flusher http.Flusher
	req     *prepared
	j       *job
	words   wordSource
	timer   *time.Timer
	created int64

	// Streaming output: SSE events appended to buf are written and flushed together when
	// the exchange is about to sleep or ends. chunkTokens has one entry per token-bearing
	// event in buf, for OnChunk.
	chunkPrefix   []byte
	buf           []byte
	room          int      // bytes reserved at the start of buf for a raw chunk's size line
	raw           *rawConn // the hijacked connection, when streaming raw
	complete      bool     // the response ended properly: a raw connection can be reused
	chunkTokens   []int
	bufTokens     int
	chunkIndex    int
	sentTokens    int
	firstTokenHit bool

	released bool

	// Non-streaming output.
	reasoning, content strings.Builder
}

func (s *Server) serveCompletion(w http.ResponseWriter, r *http.Request, chat bool) {
	// The request arrives when its handler starts: reading and tokenising the body is
	// part of the time to the first token, as on a real server, so the modelled prefill
	// runs from here and absorbs it instead of adding to it (at a small time scale a
	// millisecond of parsing would otherwise be a tenth of a modelled second).
	arrived := time.Now()
	// One snapshot of the faults decides this request, whatever SetFaults does meanwhile.
	faults := *s.faults.Load()
	req, apiErr := s.prepare(r, chat, faults)
	if apiErr != nil {
		writeError(w, apiErr.status, apiErr.kind, apiErr.msg)
		return
	}
	w.Header().Set("X-Request-Id", req.requestID)
	if req.plan.fault == faultHTTP {
		status := faults.HTTPErrorStatus
		if status == 0 {
			status = http.StatusInternalServerError
		}
		writeError(w, status, "InternalServerError", "simulated server error")
		return
	}

	// ctx ends when the client goes away or the server closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	x := &exchange{s: s, ctx: ctx, w: w, req: req, words: wordSource{newRNG(req.plan.seed, saltContent)}, created: time.Now().Unix()}
	x.j = &job{
		promptTokens: req.promptTokens,
		blocks:       req.blocks,
		kvNeed:       req.promptTokens + req.maxTokens,
		timing:       newRNG(req.plan.seed, saltTiming),
		slow:         faults.slowdown() * s.observerOverhead(),
		ready:        make(chan struct{}),
	}
	if req.stream {
		h := w.Header()
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		// Headers go out before the engine takes the request, as with vLLM's
		// StreamingResponse, so a client's first byte is not its first token.
		if x.raw = hijackRaw(w, r, h, cancel); x.raw != nil {
			x.room = chunkHeadRoom
			x.buf = make([]byte, chunkHeadRoom, 4096)
			defer func() { x.raw.finish(x.complete) }()
		} else {
			x.flusher, _ = w.(http.Flusher)
			w.WriteHeader(http.StatusOK)
			if x.flusher != nil {
				x.flusher.Flush()
			}
		}
		x.chunkPrefix = x.eventPrefix()
	}

	reason := finishAbort
	defer func() { x.release(reason, arrived) }()

	if !s.eng.arrive(x.j, arrived) {
		select {
		case <-x.j.ready:
		case <-ctx.Done():
			return
		case <-s.done:
			return
		}
	}
	x.timer = time.NewTimer(time.Hour)
	x.timer.Stop()
	defer x.timer.Stop()

	sent, err := x.generate()
	if err != nil {
		return
	}
	plan := req.plan
	switch {
	case plan.fault == faultCut && sent == plan.faultAfter:
		_ = x.flush()
		if x.raw != nil {
			return // finish closes the connection without the terminating chunk
		}
		// ErrAbortHandler makes net/http drop the connection without the terminating
		// chunk, which is what a crashed or killed server looks like to a client.
		x.release(finishAbort, arrived)
		panic(http.ErrAbortHandler)
	case plan.fault == faultHang && sent == plan.faultAfter:
		_ = x.flush()
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		return
	case plan.fault == faultInband && sent == plan.faultAfter:
		reason = finishError
		x.finishInbandError()
		return
	case plan.fault == faultAbort && sent == plan.faultAfter:
		reason = finishAbort
		x.finish(finishAbort, sent)
		return
	}
	reason = plan.finish
	x.finish(plan.finish, plan.total)
}

// pending is the number of buffered output bytes.
func (x *exchange) pending() int { return len(x.buf) - x.room }

// release takes the job out of the engine, wakes whoever its slot admits and records the
// outcome. It is idempotent so the cut path can release before it panics.
func (x *exchange) release(reason string, arrived time.Time) {
	now := time.Now()
	x.s.eng.finish(x.j, now)
	if x.released {
		return
	}
	x.released = true
	held := int64(0)
	if x.j.admitted {
		held = int64(x.req.promptTokens + x.sentTokens + x.bufTokens)
	}
	x.s.m.done(reason, now.Sub(arrived).Seconds(), held)
}

// generate emits tokens on the model's schedule until the plan's output is complete or a
// fault's token count is reached, and returns how many tokens it emitted.
func (x *exchange) generate() (int, error) {
	plan := x.req.plan
	perChunk := x.s.cfg.TokensPerChunk
	faulty := plan.fault != faultNone
	due := x.j.firstDue
	i := 0
	for i < plan.total {
		if faulty && i == plan.faultAfter {
			return i, nil
		}
		reasoning := i < plan.reasoning
		end := min(i+perChunk, plan.total)
		if reasoning {
			end = min(end, plan.reasoning)
		}
		if faulty {
			end = min(end, plan.faultAfter)
		}
		// A chunk leaves when its last token is due; the gaps are drawn per token so that
		// TPOT does not depend on how tokens are grouped.
		for t := i + 1; t < end; t++ {
			due = due.Add(x.s.eng.tokenGap(x.j))
		}
		if err := x.waitUntil(due); err != nil {
			return i, err
		}
		x.emit(reasoning, i, end, end == plan.total)
		i = end
		if i < plan.total {
			due = due.Add(x.s.eng.tokenGap(x.j))
		}
	}
	return i, nil
}

// waitUntil sleeps until due, first pushing out whatever is buffered so that it reaches
// the client on time. It returns errGone if the client or server goes away meanwhile.
func (x *exchange) waitUntil(due time.Time) error {
	d := time.Until(due)
	if d <= 0 {
		// Behind schedule: keep coalescing, but not without bound, so that a far-behind
		// stream still delivers steadily and notices a client that left.
		if x.pending() >= maxCoalescedBytes {
			return x.flush()
		}
		return nil
	}
	if err := x.flush(); err != nil {
		return err
	}
	x.timer.Reset(d)
	select {
	case <-x.timer.C:
		return nil
	case <-x.ctx.Done(): // the client went away or the server is closing
		return errGone
	}
}

// emit renders tokens [from, to) as one event (or into the non-streaming body). The words
// come from a fixed vocabulary of plain ASCII letters, so they are appended without
// escaping, straight into the write buffer.
func (x *exchange) emit(reasoning bool, from, to int, last bool) {
	x.bufTokens += to - from
	if !x.req.stream {
		sb := &x.content
		if reasoning {
			sb = &x.reasoning
		}
		for t := from; t < to; t++ {
			if x.spaceBefore(t) {
				sb.WriteByte(' ')
			}
			sb.WriteString(x.words.next(reasoning))
		}
		return
	}
	chat := x.req.chat
	if chat && from == 0 {
		x.buf = append(x.buf, x.chunkPrefix...)
		x.buf = append(x.buf, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
		x.buf = x.appendChunkUsage(x.buf, 0)
		x.buf = append(x.buf, "}\n\n"...)
	}
	x.buf = append(x.buf, x.chunkPrefix...)
	switch {
	case !chat:
		x.buf = append(x.buf, `"text":"`...)
	case reasoning:
		x.buf = append(x.buf, `"delta":{"`...)
		x.buf = append(x.buf, x.s.cfg.ReasoningField...)
		x.buf = append(x.buf, `":"`...)
	default:
		x.buf = append(x.buf, `"delta":{"content":"`...)
	}
	for t := from; t < to; t++ {
		if x.spaceBefore(t) {
			x.buf = append(x.buf, ' ')
		}
		x.buf = append(x.buf, x.words.next(reasoning)...)
	}
	x.buf = append(x.buf, '"')
	if chat {
		x.buf = append(x.buf, '}')
	}
	x.buf = append(x.buf, `,"logprobs":null,"finish_reason":`...)
	finish := ""
	if last {
		finish = x.req.plan.finish
	}
	x.buf = appendFinish(x.buf, finish)
	x.buf = append(x.buf, "}]"...)
	x.buf = x.appendChunkUsage(x.buf, to)
	x.buf = append(x.buf, "}\n\n"...)
	x.chunkTokens = append(x.chunkTokens, to-from)
}

// appendChunkUsage appends, when the request asked for continuous usage stats, the
// usage so far to a chunk: completion is the tokens streamed up to and including it,
// as vLLM reports them on every chunk.
func (x *exchange) appendChunkUsage(b []byte, completion int) []byte {
	if !x.req.continuousUsage {
		return b
	}
	p := x.req.promptTokens
	b = append(b, `,"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(p), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(p+completion), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(completion), 10)
	return append(b, '}')
}

// spaceBefore says whether token t starts with a space: every token but the first of its
// channel does, which keeps tokens.Count(channel text) equal to the tokens sent on it.
func (x *exchange) spaceBefore(t int) bool { return t != 0 && t != x.req.plan.reasoning }

// flush writes the buffered events and accounts their tokens as sent.
func (x *exchange) flush() error { return x.flushOut(false) }

// flushOut is flush; last says the response is complete with this write.
func (x *exchange) flushOut(last bool) error {
	if x.pending() == 0 {
		return nil
	}
	var err error
	if x.raw != nil {
		_, err = x.raw.conn.Write(frame(x.buf))
		x.complete = last && err == nil
	} else {
		_, err = x.w.Write(x.buf)
		if err == nil && x.flusher != nil {
			x.flusher.Flush()
		}
	}
	sentAt := time.Now()
	x.buf = x.buf[:x.room]
	x.account(sentAt)
	for _, n := range x.chunkTokens {
		if x.s.cfg.OnChunk != nil {
			x.s.cfg.OnChunk(x.req.requestID, x.chunkIndex, n, sentAt)
		}
		x.chunkIndex++
	}
	x.chunkTokens = x.chunkTokens[:0]
	if err != nil {
		return errGone
	}
	return nil
}

// account moves generated tokens from "buffered" to "sent" in the native metrics.
func (x *exchange) account(at time.Time) {
	if x.bufTokens == 0 {
		return
	}
	if !x.firstTokenHit {
		x.firstTokenHit = true
		x.s.m.firstToken(at.Sub(x.j.arrivedAt).Seconds())
	}
	x.s.m.generationTokens.Add(int64(x.bufTokens))
	x.s.m.flushes.Add(1)
	x.s.m.kvInUse.Add(int64(x.bufTokens))
	x.sentTokens += x.bufTokens
	x.bufTokens = 0
}

func (x *exchange) finishInbandError() {
	if !x.req.stream {
		x.account(time.Now())
		writeError(x.w, http.StatusInternalServerError, "InternalServerError", "simulated engine failure")
		return
	}
	x.buf = append(x.buf, `data: {"error":{"message":"simulated engine failure","type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
	x.buf = append(x.buf, "data: [DONE]\n\n"...)
	_ = x.flushOut(true)
}

// finish ends the response with finish reason after completion tokens: the usage (when
// asked for) and [DONE]. A reason other than the plan's (an abort) goes out in a chunk
// of its own, since the last token chunk carried no finish_reason.
func (x *exchange) finish(reason string, completion int) {
	plan := x.req.plan
	u := usage{PromptTokens: x.req.promptTokens, CompletionTokens: completion, TotalTokens: x.req.promptTokens + completion}
	u.PromptTokensDetails.CachedTokens = x.j.cached
	u.CompletionTokensDetails.ReasoningTokens = min(plan.reasoning, completion)
	withUsage := x.req.includeUsage && !plan.omitUsage
	if x.req.stream && reason != plan.finish {
		x.buf = append(x.buf, x.chunkPrefix...)
		if x.req.chat {
			x.buf = append(x.buf, `"delta":{}`...)
		} else {
			x.buf = append(x.buf, `"text":""`...)
		}
		x.buf = append(x.buf, `,"logprobs":null,"finish_reason":`...)
		x.buf = appendFinish(x.buf, reason)
		x.buf = append(x.buf, "}]}\n\n"...)
	}
	if x.req.stream {
		if withUsage {
			b, _ := json.Marshal(u)
			x.buf = append(x.buf, `data: {"id":`...)
			x.buf = appendJSONString(x.buf, x.responseID())
			x.buf = append(x.buf, `,"object":`...)
			x.buf = appendJSONString(x.buf, x.chunkObject())
			x.buf = append(x.buf, `,"created":`...)
			x.buf = strconv.AppendInt(x.buf, x.created, 10)
			x.buf = append(x.buf, `,"model":`...)
			x.buf = appendJSONString(x.buf, x.s.cfg.ModelName)
			x.buf = append(x.buf, `,"choices":[],"usage":`...)
			x.buf = append(x.buf, b...)
			x.buf = append(x.buf, "}\n\n"...)
		}
		x.buf = append(x.buf, "data: [DONE]\n\n"...)
		_ = x.flushOut(true)
		return
	}
	x.account(time.Now())
	body := map[string]any{
		"id":      x.responseID(),
		"created": x.created,
		"model":   x.s.cfg.ModelName,
	}
	if withUsage {
		body["usage"] = u
	}
	if x.req.chat {
		msg := map[string]any{"role": "assistant", "content": nil}
		if x.content.Len() > 0 {
			msg["content"] = x.content.String()
		}
		if x.reasoning.Len() > 0 {
			msg[x.s.cfg.ReasoningField] = x.reasoning.String()
		}
		body["object"] = "chat.completion"
		body["choices"] = []map[string]any{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": reason}}
	} else {
		body["object"] = "text_completion"
		body["choices"] = []map[string]any{{"index": 0, "text": x.content.String(), "logprobs": nil, "finish_reason": reason}}
	}
	writeJSON(x.w, http.StatusOK, body)
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (x *exchange) responseID() string {
	if x.req.chat {
		return "chatcmpl-" + x.req.requestID
	}
	return "cmpl-" + x.req.requestID
}

func (x *exchange) chunkObject() string {
	if x.req.chat {
		return "chat.completion.chunk"
	}
	return "text_completion"
}

// eventPrefix is the constant head of every choices-bearing event of this request,
// rendered once so that each token costs only its own bytes.
func (x *exchange) eventPrefix() []byte {
	b := []byte(`data: {"id":`)
	b = appendJSONString(b, x.responseID())
	b = append(b, `,"object":`...)
	b = appendJSONString(b, x.chunkObject())
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, x.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, x.s.cfg.ModelName)
	b = append(b, `,"choices":[{"index":0,`...)
	return b
}

func appendFinish(b []byte, finish string) []byte {
	if finish == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, finish)
}

// appendJSONString appends s as a JSON string literal. Only the characters JSON requires
// are escaped; valid UTF-8 passes through as is.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
