package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

const fastScale = 0.002 // 2 s of model time is 4 ms

func TestStreamWireFormat(t *testing.T) {
	cases := map[string]struct {
		field     string
		path      string
		effort    string
		wantField string
		chat      bool
	}{
		"chat reasoning_content": {field: "", path: "/v1/chat/completions", effort: "high", wantField: "reasoning_content", chat: true},
		"chat reasoning":         {field: ReasoningFieldReasoning, path: "/v1/chat/completions", effort: "max", wantField: "reasoning", chat: true},
		"completions":            {path: "/v1/completions"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rn := startServer(t, Config{TimeScale: fastScale, ReasoningField: tc.field, Seed: 7})
			prompt := promptOf("p", 300)
			body := streamChat(prompt, 2000)
			body.ReasoningEffort = tc.effort
			if !tc.chat {
				body = chatBody{Prompt: prompt, Stream: true, StreamOptions: map[string]bool{"include_usage": true}, MaxTokens: 2000}
			}
			res, err := doStream(context.Background(), rn.URL(), tc.path, "req-42", body)
			if err != nil {
				t.Fatal(err)
			}
			if res.status != http.StatusOK || !res.done || res.readErr != nil {
				t.Fatalf("status %d done %v err %v", res.status, res.done, res.readErr)
			}
			if got := res.header.Get("X-Request-Id"); got != "req-42" {
				t.Errorf("X-Request-Id = %q, want echo", got)
			}
			if res.usage == nil {
				t.Fatal("no usage chunk")
			}
			last := res.events[len(res.events)-1]
			if choices, ok := last.obj["choices"].([]any); !ok || len(choices) != 0 {
				t.Errorf("usage chunk choices = %v, want []", last.obj["choices"])
			}
			u := res.usage
			wantPrompt := 300
			if tc.chat {
				wantPrompt += TemplateTokensPerMessage + TemplateTokensGenerationPrompt
			}
			if u.PromptTokens != wantPrompt || u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Errorf("usage %+v, want prompt %d and total = prompt + completion", u, wantPrompt)
			}
			if got := tokens.Count(res.reasoning) + tokens.Count(res.content); got != u.CompletionTokens {
				t.Errorf("streamed %d tokens, usage says %d", got, u.CompletionTokens)
			}
			if got := tokens.Count(res.reasoning); got != u.CompletionTokensDetails.ReasoningTokens {
				t.Errorf("streamed %d reasoning tokens, usage says %d", got, u.CompletionTokensDetails.ReasoningTokens)
			}
			if res.finish != finishStop {
				t.Errorf("finish_reason = %q, want stop", res.finish)
			}
			if !tc.chat {
				if res.reasoning != "" {
					t.Error("completions streamed reasoning")
				}
				return
			}
			if !res.roleFirst {
				t.Errorf("first event %s is not a role-only delta", res.events[0].raw)
			}
			if u.CompletionTokensDetails.ReasoningTokens == 0 || res.content == "" {
				t.Fatalf("want both reasoning and content, got usage %+v", u)
			}
			// Reasoning strictly before content, under the configured field only.
			seenContent := false
			other := map[string]string{"reasoning": "reasoning_content", "reasoning_content": "reasoning"}[tc.wantField]
			for _, ev := range res.events[1 : len(res.events)-1] {
				raw := ev.raw
				if strings.Contains(raw, `"`+other+`"`) {
					t.Fatalf("event uses %q: %s", other, raw)
				}
				if strings.Contains(raw, `"content"`) {
					seenContent = true
				}
				if strings.Contains(raw, `"`+tc.wantField+`"`) && seenContent {
					t.Fatalf("reasoning after content: %s", raw)
				}
			}
			if !strings.Contains(res.events[len(res.events)-2].raw, `"content"`) {
				t.Errorf("finish_reason not on a content chunk: %s", res.events[len(res.events)-2].raw)
			}
		})
	}
}

func TestNonStreaming(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	cases := map[string]struct {
		path string
		body chatBody
	}{
		"chat":        {"/v1/chat/completions", chatBody{Messages: userMessage(promptOf("n", 50)), MaxTokens: 2000}},
		"completions": {"/v1/completions", chatBody{Prompt: promptOf("n", 50), MaxTokens: 2000}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			resp, err := post(context.Background(), rn.URL(), tc.path, "", tc.body)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Object  string `json:"object"`
				Choices []struct {
					Message struct {
						Content          *string `json:"content"`
						ReasoningContent string  `json:"reasoning_content"`
					} `json:"message"`
					Text         string `json:"text"`
					FinishReason string `json:"finish_reason"`
				} `json:"choices"`
				Usage usage `json:"usage"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != 200 || len(out.Choices) != 1 {
				t.Fatalf("status %d, %+v", resp.StatusCode, out)
			}
			c := out.Choices[0]
			text := c.Text
			if c.Message.Content != nil {
				text = *c.Message.Content
			}
			got := tokens.Count(text) + tokens.Count(c.Message.ReasoningContent)
			if got != out.Usage.CompletionTokens || got == 0 || c.FinishReason != finishStop {
				t.Errorf("%d tokens in body, usage %+v, finish %q", got, out.Usage, c.FinishReason)
			}
		})
	}
}

func TestDeterministicPerRequestID(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale, Seed: 3})
	get := func(id string) string {
		res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", id, streamChat("same prompt", 2000))
		if err != nil {
			t.Fatal(err)
		}
		return res.reasoning + "|" + res.content
	}
	a1, a2, b := get("a"), get("a"), get("b")
	if a1 != a2 {
		t.Error("same request ID streamed different words")
	}
	if a1 == b {
		t.Error("different request IDs streamed the same words")
	}
}

func TestMaxTokensEndsWithLength(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "x", streamChat("hi", 7))
	if err != nil {
		t.Fatal(err)
	}
	if res.finish != finishLength || res.usage == nil || res.usage.CompletionTokens != 7 {
		t.Errorf("finish %q usage %+v, want length at 7", res.finish, res.usage)
	}
}

func TestRequestErrors(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	cases := map[string]struct {
		method, path, body string
		want               int
	}{
		"unknown model":   {"POST", "/v1/chat/completions", `{"model":"nope","messages":[{"role":"user","content":"x"}]}`, 404},
		"bad effort":      {"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"reasoning_effort":"extreme"}`, 400},
		"too long":        {"POST", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"max_tokens":40000}`, 400},
		"zero max_tokens": {"POST", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400},
		"bad json":        {"POST", "/v1/chat/completions", `{`, 400},
		"no messages":     {"POST", "/v1/chat/completions", `{"messages":[]}`, 400},
		"bad top_p":       {"POST", "/v1/completions", `{"prompt":"x","top_p":0}`, 400},
		"wrong method":    {"GET", "/v1/chat/completions", ``, 405},
		"models":          {"GET", "/v1/models", ``, 200},
		"health":          {"GET", "/health", ``, 200},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest(tc.method, rn.URL()+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]any
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tc.want, body)
			}
			if tc.want >= 400 && tc.want != 405 {
				if _, ok := body["error"].(map[string]any)["message"]; !ok {
					t.Errorf("error body %v lacks error.message", body)
				}
			}
		})
	}
}

func TestOnChunkReportsEveryTokenEvent(t *testing.T) {
	type rec struct{ index, tokens int }
	cases := map[string]int{"one token per chunk": 1, "three tokens per chunk": 3}
	for name, perChunk := range cases {
		t.Run(name, func(t *testing.T) {
			got := make(chan rec, 4096)
			rn := startServer(t, Config{TimeScale: fastScale, TokensPerChunk: perChunk, OnChunk: func(id string, i, n int, at time.Time) {
				if id == "hook" {
					got <- rec{i, n}
				}
			}})
			res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "hook", streamChat("hello", 2000))
			if err != nil {
				t.Fatal(err)
			}
			close(got)
			var idx []int
			sum := 0
			for r := range got {
				idx = append(idx, r.index)
				sum += r.tokens
				if r.tokens < 1 || r.tokens > perChunk {
					t.Errorf("chunk carried %d tokens, want 1..%d", r.tokens, perChunk)
				}
			}
			want := make([]int, res.tokenEvts)
			for i := range want {
				want[i] = i
			}
			if diff := cmp.Diff(want, idx); diff != "" {
				t.Errorf("hook indexes (-want +got):\n%s", diff)
			}
			if sum != res.usage.CompletionTokens {
				t.Errorf("hook saw %d tokens, usage %d", sum, res.usage.CompletionTokens)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	broken := builtinProfiles["flare"]
	broken.TPOTBase = 0
	cases := map[string]struct {
		cfg     Config
		wantErr string
	}{
		"defaults":             {Config{}, ""},
		"reasoning field":      {Config{ReasoningField: "thoughts"}, "reasoning field"},
		"negative time scale":  {Config{TimeScale: -1}, "time scale"},
		"rate above one":       {Config{Faults: Faults{StreamCutRate: 1.5}}, "stream_cut_rate"},
		"status not an error":  {Config{Faults: Faults{HTTPErrorStatus: 200}}, "http_error_status"},
		"profile without TPOT": {Config{Profile: broken}, "tpot_base"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := NewServer(tc.cfg)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
	if _, err := LookupProfile("vllm"); err == nil || !strings.Contains(err.Error(), "flare, incumbent") {
		t.Errorf("LookupProfile error %v does not list the valid names", err)
	}
	a, b := builtinProfiles["flare"].ImageID(), builtinProfiles["incumbent"].ImageID()
	if a == b || a != builtinProfiles["flare"].ImageID() {
		t.Error("image IDs are not a deterministic function of the profile")
	}
}
