package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// startServer listens on a free loopback port and closes the server when the test ends.
func startServer(t testing.TB, cfg Config) *Running {
	t.Helper()
	rn, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rn.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return rn
}

// promptOf returns n distinct words tagged with tag, so prompts with different tags share
// no block.
func promptOf(tag string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s%d", tag, i)
	}
	return b.String()
}

type chatBody struct {
	Model           string        `json:"model,omitempty"`
	Messages        []wireMessage `json:"messages,omitempty"`
	Prompt          string        `json:"prompt,omitempty"`
	Stream          bool          `json:"stream"`
	StreamOptions   any           `json:"stream_options,omitempty"`
	MaxTokens       int           `json:"max_tokens,omitempty"`
	ReasoningEffort string        `json:"reasoning_effort,omitempty"`
	Temperature     float64       `json:"temperature,omitempty"`
}

func userMessage(text string) []wireMessage {
	b, _ := json.Marshal(text)
	return []wireMessage{{Role: "user", Content: b}}
}

func streamChat(prompt string, maxTokens int) chatBody {
	return chatBody{Messages: userMessage(prompt), Stream: true, StreamOptions: map[string]bool{"include_usage": true}, MaxTokens: maxTokens}
}

// streamEvent is one SSE data event as the test client saw it.
type streamEvent struct {
	raw string
	at  time.Time
	obj map[string]any
}

// streamResult is a classified stream, the way a careful client would see it.
type streamResult struct {
	status    int
	header    http.Header
	body      []byte // non-SSE body, for errors and non-streaming responses
	events    []streamEvent
	done      bool  // saw data: [DONE]
	readErr   error // the stream ended without a clean EOF
	reasoning string
	content   string
	finish    string
	usage     *usage
	inband    map[string]any
	roleFirst bool
	firstTok  time.Time // first reasoning or content token (TTFO)
	lastTok   time.Time
	tokenEvts int
	sentAt    time.Time
}

func post(ctx context.Context, url, path, requestID string, body any) (*http.Response, error) {
	return postWith(ctx, http.DefaultClient, url, path, requestID, body)
}

func postWith(ctx context.Context, client *http.Client, url, path, requestID string, body any) (*http.Response, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	return client.Do(req)
}

// doStream sends body and reads the response to its end (or ctx's).
func doStream(ctx context.Context, url, path, requestID string, body any) (*streamResult, error) {
	return doStreamClient(ctx, http.DefaultClient, url, path, requestID, body)
}

func doStreamClient(ctx context.Context, client *http.Client, url, path, requestID string, body any) (*streamResult, error) {
	res := &streamResult{sentAt: time.Now()}
	resp, err := postWith(ctx, client, url, path, requestID, body)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	res.status, res.header = resp.StatusCode, resp.Header
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		res.body, res.readErr = io.ReadAll(resp.Body)
		return res, nil
	}
	rd := bufio.NewReader(resp.Body)
	for {
		line, err := rd.ReadString('\n')
		at := time.Now()
		if err != nil {
			if err != io.EOF || !res.done {
				res.readErr = err
			}
			return res, nil
		}
		line = strings.TrimRight(line, "\n")
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			res.done = true
			continue
		}
		ev := streamEvent{raw: data, at: at}
		if err := json.Unmarshal([]byte(data), &ev.obj); err != nil {
			return nil, fmt.Errorf("event %q: %v", data, err)
		}
		res.events = append(res.events, ev)
		res.absorb(ev)
	}
}

func (r *streamResult) absorb(ev streamEvent) {
	if e, ok := ev.obj["error"].(map[string]any); ok {
		r.inband = e
		return
	}
	if u, ok := ev.obj["usage"]; ok && u != nil {
		b, _ := json.Marshal(u)
		r.usage = &usage{}
		_ = json.Unmarshal(b, r.usage)
	}
	choices, _ := ev.obj["choices"].([]any)
	for _, c := range choices {
		ch := c.(map[string]any)
		if f, ok := ch["finish_reason"].(string); ok {
			r.finish = f
		}
		text := ""
		if d, ok := ch["delta"].(map[string]any); ok {
			if role, ok := d["role"].(string); ok && role == "assistant" && len(r.events) == 1 {
				r.roleFirst = true
			}
			rc, _ := d["reasoning_content"].(string)
			rs, _ := d["reasoning"].(string)
			r.reasoning += rc + rs
			if rc != "" && rs != "" {
				panic("both reasoning fields in one delta")
			}
			ct, _ := d["content"].(string)
			r.content += ct
			text = rc + rs + ct
		} else if t, ok := ch["text"].(string); ok {
			r.content += t
			text = t
		}
		if text != "" {
			if r.firstTok.IsZero() {
				r.firstTok = ev.at
			}
			r.lastTok = ev.at
			r.tokenEvts++
		}
	}
}

// ttft and tpot are the client-side figures seed 000 defines.
func (r *streamResult) ttft() time.Duration { return r.firstTok.Sub(r.sentAt) }
func (r *streamResult) tpot() time.Duration {
	if r.usage == nil || r.usage.CompletionTokens < 2 {
		return 0
	}
	return r.lastTok.Sub(r.firstTok) / time.Duration(r.usage.CompletionTokens-1)
}

func median(ds []time.Duration) time.Duration { return medianDuration(ds) }

func within(got, want time.Duration, tol float64) bool {
	return float64(got) >= float64(want)*(1-tol) && float64(got) <= float64(want)*(1+tol)
}
