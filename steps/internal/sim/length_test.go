package sim

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// lengthBody is a streaming chat request with vLLM's fixed-length fields.
type lengthBody struct {
	chatBody
	MinTokens *int `json:"min_tokens,omitempty"`
	IgnoreEOS bool `json:"ignore_eos,omitempty"`
}

// TestFixedOutputLength: ignore_eos generates exactly max_tokens, min_tokens extends
// a shorter natural completion, and a request without them keeps its natural length.
// Each case runs over many request IDs, so natural lengths below and above the bound
// both occur.
func TestFixedOutputLength(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	ptr := func(v int) *int { return &v }
	cases := map[string]struct {
		min       *int
		ignoreEOS bool
		max       int
		check     func(t *testing.T, natural, got int, finish string)
	}{
		"ignore_eos gives max_tokens": {nil, true, 300, func(t *testing.T, _, got int, finish string) {
			if got != 300 || finish != finishLength {
				t.Errorf("completion %d finish %s, want 300 length", got, finish)
			}
		}},
		"min_tokens = max_tokens is exact": {ptr(256), false, 256, func(t *testing.T, _, got int, finish string) {
			if got != 256 || finish != finishLength {
				t.Errorf("completion %d finish %s, want 256 length", got, finish)
			}
		}},
		"min_tokens below max extends short completions only": {ptr(50), false, 5000, func(t *testing.T, natural, got int, finish string) {
			want := max(natural, 50)
			if got != want || finish != finishStop {
				t.Errorf("natural %d: completion %d finish %s, want %d stop", natural, got, finish, want)
			}
		}},
	}
	below, above := 0, 0
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for i := range 12 {
				id := fmt.Sprintf("len-%d", i)
				natural, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", id, streamChat("hello there", 5000))
				if err != nil {
					t.Fatal(err)
				}
				b := lengthBody{chatBody: streamChat("hello there", tc.max), MinTokens: tc.min, IgnoreEOS: tc.ignoreEOS}
				got, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", id, b)
				if err != nil {
					t.Fatal(err)
				}
				if got.usage == nil || !got.done {
					t.Fatalf("incomplete stream: %+v", got)
				}
				tc.check(t, natural.usage.CompletionTokens, got.usage.CompletionTokens, got.finish)
				if natural.usage.CompletionTokens < 50 {
					below++
				} else {
					above++
				}
			}
		})
	}
	if below == 0 || above == 0 {
		t.Errorf("natural lengths: %d below 50, %d at or above; the cases need both", below, above)
	}
}

// TestMinTokensAboveMaxIsRefused: as vLLM, min_tokens > max_tokens is a 400 that
// names both.
func TestMinTokensAboveMaxIsRefused(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	resp, err := http.Post(rn.URL()+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"max_tokens":8,"min_tokens":9}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body := make([]byte, 512)
	n, _ := resp.Body.Read(body)
	if resp.StatusCode != 400 || !strings.Contains(string(body[:n]), "min_tokens must be less than or equal to max_tokens=8, got 9.") {
		t.Errorf("status %d body %s", resp.StatusCode, body[:n])
	}
}

// TestContinuousUsage: with stream_options.continuous_usage_stats every chunk carries
// the usage so far, and the deltas between token chunks are the tokens each carried
// (three per chunk here), summing to the final usage.
func TestContinuousUsage(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale, TokensPerChunk: 3})
	b := streamChat("hello there", 100)
	b.StreamOptions = map[string]bool{"include_usage": true, "continuous_usage_stats": true}
	res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "cu", b)
	if err != nil {
		t.Fatal(err)
	}
	prev, sum := 0, 0
	for i, ev := range res.events {
		u, ok := ev.obj["usage"].(map[string]any)
		if !ok {
			t.Fatalf("event %d has no usage: %s", i, ev.raw)
		}
		c := int(u["completion_tokens"].(float64))
		if int(u["total_tokens"].(float64)) != int(u["prompt_tokens"].(float64))+c {
			t.Errorf("event %d: total_tokens is not prompt + completion: %v", i, u)
		}
		if choices, _ := ev.obj["choices"].([]any); len(choices) > 0 && c > prev {
			if d := c - prev; d > 3 {
				t.Errorf("event %d carried %d tokens, want at most 3", i, d)
			}
			sum += c - prev
		}
		prev = c
	}
	if res.usage == nil || sum != res.usage.CompletionTokens || sum < 2 {
		t.Errorf("chunk deltas sum to %d, final usage %+v", sum, res.usage)
	}
	// Without the option, only the final chunk carries usage.
	plain, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "cu", streamChat("hello there", 100))
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range plain.events[:len(plain.events)-1] {
		if _, ok := ev.obj["usage"]; ok {
			t.Errorf("event %d carries usage without continuous_usage_stats: %s", i, ev.raw)
		}
	}
}
