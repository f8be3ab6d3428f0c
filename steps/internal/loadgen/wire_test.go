package loadgen

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestWireCases runs one request per case against a real socket and a server that
// emits raw SSE bytes, and checks the outcome and what was recorded.
func TestWireCases(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	type want struct {
		outcome    Outcome
		status     int
		chunks     int // parsed JSON chunks, -1 = don't check
		content    int
		reasoning  int
		usage      bool
		finish     string
		ttfo, ttft bool // present?
		errHas     string
	}
	cases := map[string]struct {
		handler        http.HandlerFunc
		requestTimeout time.Duration
		want           want
		check          func(t *testing.T, r Record)
	}{
		"well-formed stream": {
			handler: script(okStream(3)),
			want:    want{outcome: OK, status: 200, chunks: 6, content: 3, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				if r.Usage.PromptTokens != 190 || r.Usage.CompletionTokens != 3 || *r.Usage.CachedTokens != 16 || *r.Usage.ReasoningTokens != 2 {
					t.Errorf("usage = %+v", *r.Usage)
				}
			},
		},
		"events split across writes": {
			handler: splitWrites(okStream(4), 7),
			want:    want{outcome: OK, status: 200, chunks: 7, content: 4, usage: true, finish: "stop", ttfo: true, ttft: true},
		},
		"merged events in one write": {
			handler: script(okStream(5)),
			want:    want{outcome: OK, status: 200, chunks: 8, content: 5, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				// One write, one read: the first and last token share a stamp.
				if *r.TTFOAtMS != *r.LastTokenAtMS {
					t.Errorf("ttfo %v != last_token %v for events from one read", *r.TTFOAtMS, *r.LastTokenAtMS)
				}
			},
		},
		"2 MB event": {
			handler: script(roleChunk, contentChunk(big), finishChunk("stop"), usageChunk(190, 1), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true},
		},
		"comments and pings": {
			handler: script(": ping\n\n", roleChunk, ":keep-alive\n\n", contentChunk("a"), ": ping\n\n", finishChunk("stop"), usageChunk(190, 1), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true},
		},
		"multi-line data field": {
			handler: script(roleChunk, "data: {\"choices\":[{\"index\":0,\n", "data: \"delta\":{\"content\":\"a\"}}]}\n\n", finishChunk("stop"), usageChunk(190, 1), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true},
		},
		"role chunk is not a token": {
			handler: script(roleChunk, pause(80*time.Millisecond), contentChunk("a"), contentChunk("b"), finishChunk("stop"), usageChunk(190, 2), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 5, content: 2, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				if gap := *r.TTFOAtMS - *r.FirstByteAtMS; gap < 70 {
					t.Errorf("ttfo − first_byte = %.1f ms; the role-only chunk must not set TTFO", gap)
				}
			},
		},
		"usage-only chunk does not move last token": {
			handler: script(roleChunk, contentChunk("a"), contentChunk("b"), finishChunk("length"), pause(80*time.Millisecond), usageChunk(190, 2), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 5, content: 2, usage: true, finish: "length", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				if gap := *r.EndAtMS - *r.LastTokenAtMS; gap < 70 {
					t.Errorf("end − last_token = %.1f ms; the usage chunk must not be a token", gap)
				}
			},
		},
		"reasoning before content: TTFO precedes visible TTFT": {
			handler: script(roleChunk, reasoningChunk("reasoning_content", "think"), pause(80*time.Millisecond), reasoningChunk("reasoning", "more"), contentChunk("a"), finishChunk("stop"), usageChunk(190, 3), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 6, content: 1, reasoning: 2, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				if gap := *r.TTFTVisibleAtMS - *r.TTFOAtMS; gap < 70 {
					t.Errorf("visible ttft − ttfo = %.1f ms, want ≥ 70 (reasoning counts for TTFO only)", gap)
				}
			},
		},
		"tool_calls are visible output": {
			handler: script(roleChunk, ev(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f"}}]}}]}`), finishChunk("tool_calls"), usageChunk(190, 5), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 4, content: 1, usage: true, finish: "tool_calls", ttfo: true, ttft: true},
		},
		"reasoning-only length exhaustion": {
			handler: script(roleChunk, reasoningChunk("reasoning", "a"), reasoningChunk("reasoning", "b"), finishChunk("length"), usageChunk(190, 2048), doneEvent),
			want:    want{outcome: NoVisibleOutput, status: 200, chunks: 5, reasoning: 2, usage: true, finish: "length", ttfo: true, errHas: "no visible token"},
		},
		"finish_reason abort is not ok": {
			handler: script(roleChunk, contentChunk("a"), contentChunk("b"), finishChunk("abort"), usageChunk(190, 2), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 5, content: 2, usage: true, finish: "abort", ttfo: true, ttft: true, errHas: "finish_reason abort"},
		},
		"finish_reason error is not ok": {
			handler: script(roleChunk, reasoningChunk("reasoning", "r"), finishChunk("error"), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 3, reasoning: 1, finish: "error", ttfo: true, errHas: "finish_reason error"},
		},
		"e2e ends at the last token, not at [DONE]": {
			handler: script(roleChunk, contentChunk("a"), contentChunk("b"), pause(80*time.Millisecond), finishChunk("stop"), usageChunk(190, 2), pause(40*time.Millisecond), doneEvent),
			want:    want{outcome: OK, status: 200, chunks: 5, content: 2, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				e2e, _ := E2EMillis(r)
				end, _ := StreamEndMillis(r)
				if end-e2e < 110 || e2e != *r.LastTokenAtMS-*r.ScheduledAtMS {
					t.Errorf("e2e %.1f ms, stream end %.1f ms: e2e must stop at the last token, 120 ms before [DONE]", e2e, end)
				}
				if r.TokenChunks != 2 {
					t.Errorf("token_chunks = %d, want 2", r.TokenChunks)
				}
			},
		},
		"in-band error object": {
			handler: script(roleChunk, contentChunk("a"), ev(`{"error":{"message":"boom","type":"InternalServerError","code":500}}`), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 3, content: 1, ttfo: true, ttft: true, errHas: "boom"},
		},
		"flat error response as an event": {
			// Older vLLM sent its ErrorResponse itself mid-stream, then [DONE].
			handler: script(roleChunk, contentChunk("a"), ev(`{"object":"error","message":"prompt too long","type":"BadRequestError","param":null,"code":400}`), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 3, content: 1, ttfo: true, ttft: true, errHas: `in-band error: {"object":"error","message":"prompt too long"`},
		},
		"event: error": {
			handler: script(roleChunk, "event: error\ndata: {\"message\":\"overloaded\"}\n\n", doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 1, errHas: "overloaded"},
		},
		"missing usage": {
			handler: script(roleChunk, contentChunk("a"), finishChunk("stop"), doneEvent),
			want:    want{outcome: MissingTerminalMetadata, status: 200, chunks: 3, content: 1, finish: "stop", ttfo: true, ttft: true, errHas: "usage"},
		},
		"missing finish_reason": {
			handler: script(roleChunk, contentChunk("a"), usageChunk(190, 1), doneEvent),
			want:    want{outcome: MissingTerminalMetadata, status: 200, chunks: 3, content: 1, usage: true, ttfo: true, ttft: true, errHas: "finish_reason"},
		},
		"stream ends without [DONE]": {
			handler: script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(190, 1)),
			want:    want{outcome: StreamError, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true, errHas: "before [DONE]"},
		},
		"connection cut mid-event": {
			handler: cutConnection,
			want:    want{outcome: StreamError, status: 200, chunks: 2, content: 1, ttfo: true, ttft: true, errHas: "before [DONE]"},
		},
		"malformed chunk": {
			handler: script(roleChunk, ev(`{"choices":[`), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 1, errHas: "malformed"},
		},
		"non-200 2xx is accepted": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNonAuthoritativeInfo)
				script(okStream(2))(w, r)
			},
			want: want{outcome: OK, status: 203, chunks: 5, content: 2, usage: true, finish: "stop", ttfo: true, ttft: true},
		},
		"500 is an http error": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, `{"error":{"message":"engine dead"}}`, 500)
			},
			want: want{outcome: HTTPError, status: 500, chunks: 0, errHas: "engine dead"},
		},
		"hang after headers times out": {
			handler:        hang(roleChunk),
			requestTimeout: 200 * time.Millisecond,
			want:           want{outcome: Timeout, status: 200, chunks: 1, errHas: "request timeout"},
			check: func(t *testing.T, r Record) {
				if end, _ := StreamEndMillis(r); end < 190 {
					t.Errorf("stream end = %.1f ms, want ≥ the 200 ms timeout", end)
				}
				if _, ok := E2EMillis(r); ok {
					t.Error("a request that streamed no token has an E2E")
				}
			},
		},
		"negative usage is implausible": {
			handler: script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(190, -1000), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true, errHas: "implausible usage: completion_tokens -1000"},
		},
		"absurd usage is implausible": {
			handler: script(roleChunk, contentChunk("a"), finishChunk("stop"), usageChunk(190, 999999999999999999), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 4, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true, errHas: "implausible usage: completion_tokens 999999999999999999"},
		},
		"fewer completion tokens than token chunks": {
			handler: script(roleChunk, contentChunk("a"), contentChunk("b"), contentChunk("c"), finishChunk("stop"), usageChunk(190, 2), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 6, content: 3, usage: true, finish: "stop", ttfo: true, ttft: true, errHas: "implausible usage: completion_tokens 2, but 3 chunks carried tokens"},
		},
		"an empty array or object with spaces inside is no token": {
			handler: script(roleChunk, pause(80*time.Millisecond), ev(`{"choices":[{"index":0,"delta":{"content":[ ]},"finish_reason":null}]}`),
				ev(`{"choices":[{"index":0,"delta":{"tool_calls":[ ]},"finish_reason":null}]}`), ev(`{"choices":[{"index":0,"delta":{"reasoning_content":{ }},"finish_reason":null}]}`),
				pause(80*time.Millisecond), contentChunk("a"), finishChunk("stop"), usageChunk(190, 1), doneEvent),
			want: want{outcome: OK, status: 200, chunks: 7, content: 1, usage: true, finish: "stop", ttfo: true, ttft: true},
			check: func(t *testing.T, r Record) {
				if gap := *r.TTFOAtMS - *r.FirstByteAtMS; gap < 150 {
					t.Errorf("ttfo − first_byte = %.1f ms; the empty chunks 80 ms in must not set TTFO", gap)
				}
			},
		},
		"finish_reason abort stays when stop follows": {
			handler: script(roleChunk, contentChunk("a"), finishChunk("abort"), finishChunk("stop"), usageChunk(190, 1), doneEvent),
			want:    want{outcome: StreamError, status: 200, chunks: 5, content: 1, usage: true, finish: "abort", ttfo: true, ttft: true, errHas: "finish_reason abort"},
		},
		"503 names its Retry-After": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "120")
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			want: want{outcome: HTTPError, status: 503, chunks: 0, errHas: "HTTP 503: (Retry-After: 120)"},
		},
		"307 names its Location": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "http://elsewhere:8000/v1/chat/completions")
				w.WriteHeader(http.StatusTemporaryRedirect)
			},
			want: want{outcome: HTTPError, status: 307, chunks: 0, errHas: "HTTP 307: (Location: http://elsewhere:8000/v1/chat/completions)"},
		},
		"gzip SSE names its Content-Encoding": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/octet-stream")
				w.Header().Set("Content-Encoding", "gzip")
				w.Write([]byte{0x1f, 0x8b, 0x08, 0x00})
			},
			want: want{outcome: StreamError, status: 200, chunks: 0, errHas: "the response is Content-Type application/octet-stream, Content-Encoding gzip, not text/event-stream"},
		},
		"JSON instead of SSE names its Content-Type": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"error":{"message":"model overloaded"}}`)
			},
			want: want{outcome: StreamError, status: 200, chunks: 0, errHas: "stream ended before [DONE]: the response is Content-Type application/json, not text/event-stream"},
		},
		"hang before headers times out": {
			handler: func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				<-r.Context().Done()
			},
			requestTimeout: 200 * time.Millisecond,
			want:           want{outcome: Timeout, status: 0, chunks: 0, errHas: "request timeout"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			checkLeaks(t)
			srv := server(t, tc.handler)
			cfg := testConfig(srv.URL)
			if tc.requestTimeout > 0 {
				cfg.RequestTimeout = tc.requestTimeout
			}
			var out bytes.Buffer
			res, err := Run(context.Background(), cfg, &out)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			recs, err := ReadRecords(&out)
			if err != nil || len(recs) != 1 {
				t.Fatalf("records: %v, %d lines", err, len(recs))
			}
			r := recs[0]
			w := tc.want
			if r.Outcome != w.outcome || res.Outcomes[w.outcome] != 1 {
				t.Errorf("outcome = %s (%s), want %s", r.Outcome, r.Error, w.outcome)
			}
			if r.HTTPStatus != w.status {
				t.Errorf("http_status = %d, want %d", r.HTTPStatus, w.status)
			}
			if w.chunks >= 0 && (r.Chunks != w.chunks || r.ContentChunks != w.content || r.ReasoningChunks != w.reasoning) {
				t.Errorf("chunks/content/reasoning = %d/%d/%d, want %d/%d/%d", r.Chunks, r.ContentChunks, r.ReasoningChunks, w.chunks, w.content, w.reasoning)
			}
			if (r.Usage != nil) != w.usage {
				t.Errorf("usage present = %v, want %v", r.Usage != nil, w.usage)
			}
			if got := deref(r.FinishReason); got != w.finish {
				t.Errorf("finish_reason = %q, want %q", got, w.finish)
			}
			if (r.TTFOAtMS != nil) != w.ttfo || (r.TTFTVisibleAtMS != nil) != w.ttft {
				t.Errorf("ttfo present %v, ttft present %v; want %v, %v", r.TTFOAtMS != nil, r.TTFTVisibleAtMS != nil, w.ttfo, w.ttft)
			}
			if !strings.Contains(r.Error, w.errHas) || (w.errHas == "" && r.Error != "") {
				t.Errorf("error = %q, want it to contain %q", r.Error, w.errHas)
			}
			if r.EndAtMS == nil || r.SendAtMS == nil || *r.EndAtMS < *r.SendAtMS {
				t.Errorf("send %v end %v: every sent request needs an end after its send", r.SendAtMS, r.EndAtMS)
			}
			if r.ID != "blk/0" {
				t.Errorf("id = %q", r.ID)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// rawResponse answers with the bytes of resp written on the hijacked socket, which
// is then closed: what no net/http handler can send.
func rawResponse(resp string) http.HandlerFunc { return rawWrites(0, resp) }

// rawWrites writes each part on the hijacked socket, flushed, pausing between
// them, then closes the socket.
func rawWrites(pause time.Duration, parts ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		defer conn.Close()
		for i, p := range parts {
			if i > 0 {
				time.Sleep(pause)
			}
			buf.WriteString(p)
			buf.Flush()
		}
	}
}

// A response head whose lines end in a bare LF is read as net/http's client reads
// it; the request used to wait for a CRLF CRLF that never came.
func TestBareLFResponseHead(t *testing.T) {
	checkLeaks(t)
	srv := server(t, rawResponse("HTTP/1.1 200 OK\nContent-Type: text/event-stream\nX-Served-By: sim-7\r\nConnection: close\n\n"+okStream(3)))
	cfg := testConfig(srv.URL)
	cfg.IdentityHeader = "X-Served-By"
	var out bytes.Buffer
	if _, err := Run(context.Background(), cfg, &out); err != nil {
		t.Fatal(err)
	}
	recs, err := ReadRecords(&out)
	if err != nil || len(recs) != 1 {
		t.Fatalf("records: %v, %d", err, len(recs))
	}
	if r := recs[0]; r.Outcome != OK || r.HTTPStatus != 200 || r.ContentChunks != 3 || r.Usage == nil || r.ServedBy != "sim-7" {
		t.Errorf("record %+v (%s): want ok, 200, 3 content chunks, usage, served by sim-7", r, r.Error)
	}
}

// A server that closes the connection after each response without saying
// "Connection: close" costs a dial per request, not a failed request, when its FIN
// has arrived before the next send: the client sees the connection's end waiting
// on the socket. (A FIN still on its way when the next request is sent fails that
// request: a POST is never sent twice.)
func TestConnectionClosedWithoutNotice(t *testing.T) {
	checkLeaks(t)
	body := okStream(2)
	srv := server(t, rawResponse(fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)))
	// Open loop at 10 requests/s: the server's FIN has long arrived when the next
	// request is due on the one connection.
	threeRequestsTwoDials(t, srv.URL, 10, "")
}

// An idle connection that holds bytes nobody asked for (a "408 Request Timeout"
// before the server closes it) cannot carry the next request: it is dialled anew.
// The 408 used to be recorded as the next request's response.
func TestUnsolicitedBytesOnIdleConnection(t *testing.T) {
	checkLeaks(t)
	body := okStream(2)
	// The 408 comes 20 ms after the response, long before the next request is due.
	srv := server(t, rawWrites(20*time.Millisecond,
		fmt.Sprintf("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body),
		"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))

	threeRequestsTwoDials(t, srv.URL, 10, "")
}

// A TLS server closing an idle connection sends close_notify before its FIN; the
// client sees it through TLS (the raw socket shows only bytes) and dials anew, for
// TLS 1.2 and 1.3 (whose session tickets, also bytes waiting, keep a connection).
func TestTLSConnectionClosedWithoutNotice(t *testing.T) {
	checkLeaks(t)
	for _, ver := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		body := okStream(2)
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			io.WriteString(w, body)
		}))
		srv.TLS = &tls.Config{MaxVersion: ver}
		// The server closes every connection once idle for 20 ms, with close_notify.
		srv.Config.IdleTimeout = 20 * time.Millisecond
		srv.StartTLS()
		t.Cleanup(srv.Close)
		roots := x509.NewCertPool()
		roots.AddCert(srv.Certificate())
		testRootCAs = roots
		t.Cleanup(func() { testRootCAs = nil })
		threeRequestsTwoDials(t, srv.URL, 5, fmt.Sprintf("TLS %x: ", ver))
	}
}

// Headers read after the body (Retry-After on an error reply) come from the head as
// it was received, not from the buffer the body's bytes then overwrote.
func TestHeadersReadAfterTheBody(t *testing.T) {
	checkLeaks(t)
	// The body arrives 50 ms after the head, in a read of its own.
	srv := server(t, rawWrites(50*time.Millisecond,
		"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 7\r\nContent-Length: 200\r\n\r\n",
		strings.Repeat("x", 200)))

	var out bytes.Buffer
	if _, err := Run(context.Background(), testConfig(srv.URL), &out); err != nil {
		t.Fatal(err)
	}
	recs, _ := ReadRecords(&out)
	if len(recs) != 1 || !strings.Contains(recs[0].Error, "(Retry-After: 7)") {
		t.Errorf("records %+v: want one whose error names Retry-After: 7", recs)
	}
}

// threeRequestsTwoDials sends three requests on one connection, open loop at rate
// per second, and fails the test unless every one is ok and the last two went on
// connections dialled in the block (the server had left the one before unusable).
func threeRequestsTwoDials(t *testing.T, url string, rate float64, what string) {
	t.Helper()
	res, recs := runConstant(t, url, rate, 1, 3)
	for _, r := range recs {
		if r.Outcome != OK {
			t.Errorf("%srequest %d: %s %d (%s)", what, r.Index, r.Outcome, r.HTTPStatus, r.Error)
		}
	}
	if len(recs) != 3 || res.Dial == nil || res.Dial.Warm != 1 || res.Dial.InBlock != 2 || res.Dial.InBlockFails != 0 {
		t.Errorf("%s%d records, dials %+v: want 3 records, 1 warm dial and 2 in the block", what, len(recs), res.Dial)
	}
}
