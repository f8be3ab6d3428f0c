package loadgen

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
)

// Raw SSE event builders: the test servers write exactly these bytes.
func ev(json string) string { return "data: " + json + "\n\n" }

var (
	roleChunk = ev(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	doneEvent = "data: [DONE]\n\n"
)

func contentChunk(s string) string {
	return ev(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, s))
}

func reasoningChunk(field, s string) string {
	return ev(fmt.Sprintf(`{"choices":[{"index":0,"delta":{%q:%q},"finish_reason":null}]}`, field, s))
}

func finishChunk(reason string) string {
	return ev(fmt.Sprintf(`{"choices":[{"index":0,"delta":{},"finish_reason":%q}]}`, reason))
}

func usageChunk(prompt, completion int) string {
	return ev(fmt.Sprintf(`{"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,`+
		`"prompt_tokens_details":{"cached_tokens":16},"completion_tokens_details":{"reasoning_tokens":2}}}`,
		prompt, completion, prompt+completion))
}

// okStream is a well-formed chat stream: role, n content chunks, finish, usage, [DONE].
func okStream(n int) string {
	var b strings.Builder
	b.WriteString(roleChunk)
	for i := range n {
		b.WriteString(contentChunk(fmt.Sprintf("w%d ", i)))
	}
	b.WriteString(finishChunk("stop"))
	b.WriteString(usageChunk(190, n))
	b.WriteString(doneEvent)
	return b.String()
}

// pause is a marker inside a script: the server flushes and sleeps.
type pause time.Duration

// script returns a handler that writes each string (flushing after it) and sleeps
// at each pause.
func script(parts ...any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for _, p := range parts {
			switch p := p.(type) {
			case string:
				w.Write([]byte(p))
				f.Flush()
			case pause:
				time.Sleep(time.Duration(p))
			}
		}
	}
}

// splitWrites writes s in pieces of n bytes, flushing each: events arrive split
// across socket reads.
func splitWrites(s string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for len(s) > 0 {
			k := min(n, len(s))
			w.Write([]byte(s[:k]))
			f.Flush()
			s = s[k:]
			time.Sleep(100 * time.Microsecond)
		}
	}
}

// hang sends headers and optional bytes, then waits for the client to go away.
func hang(before string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		// The server notices a client that went away only once it reads the
		// connection again, which it does after the request body is consumed.
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.Write([]byte(before))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}
}

// cutConnection writes a raw HTTP/1.1 chunked response and closes the socket in the
// middle of an event, as a crashing server would.
func cutConnection(w http.ResponseWriter, r *http.Request) {
	conn, buf, err := w.(http.Hijacker).Hijack()
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	body := roleChunk + contentChunk("hello") + `data: {"choices":[{"ind`
	fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(body), body)
	buf.Flush()
}

func testConfig(url string) Config {
	return Config{
		Endpoint: url, Model: "test-model", Concurrency: 1, Requests: 1, IDPrefix: "blk",
		Timeout: 20 * time.Second, RequestTimeout: 10 * time.Second,
		Workload: Workload{Corpus: corpus.KindSummary, CorpusSeed: 4342, NominalContext: 256, Prefixes: corpus.PrefixUnique},
	}
}

// checkLeaks fails the test if goroutines started during it are still running once
// it is over (after the servers registered later have closed).
func checkLeaks(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if n := runtime.NumGoroutine(); n > before {
			buf := make([]byte, 1<<16)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("goroutine leak: %d before, %d after\n%s", before, n, buf)
		}
	})
}

// server starts an httptest server that is closed when the test ends.
func server(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func lines(b *bytes.Buffer) int { return strings.Count(b.String(), "\n") }

func f(v float64) *float64 { return &v }

// runConstant runs requests against url open loop, at a constant rate per second,
// at most concurrency at once, and returns the result and the records.
func runConstant(t *testing.T, url string, rate float64, concurrency, requests int) (*Result, []Record) {
	t.Helper()
	cfg := testConfig(url)
	cfg.Mode, cfg.Arrival, cfg.Rate = ModeOpen, ArrivalConstant, rate
	cfg.Concurrency, cfg.Requests = concurrency, requests
	return runRecords(t, cfg)
}
