package loadgen

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// chunkSeeds are chunk shapes seen on the wire (vLLM, SGLang, the simulator) and
// edge cases for the fast path.
var chunkSeeds = []string{
	`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":"w1 "},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning":"r"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"r"},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
	`{"choices":[],"usage":{"prompt_tokens":190,"completion_tokens":3,"total_tokens":193,"prompt_tokens_details":{"cached_tokens":16},"completion_tokens_details":{"reasoning_tokens":2}}}`,
	`{"id":"chatcmpl-x","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":" tok"},"logprobs":null,"finish_reason":"length"}],"usage":null}`,
	`{"id":"c","choices":[{"index":0,"delta":{"content":"w1 "},"finish_reason":null}],"usage":{"prompt_tokens":190,"total_tokens":191,"completion_tokens":1}}`,
	`{"choices":[],"usage":{}}`,
	`{"choices":[],"usage":{"prompt_tokens":-3,"completion_tokens":0}}`,
	`{"choices":[],"usage":{"prompt_tokens":1.0}}`,
	`{"choices":[],"usage":{"prompt_tokens":1e2}}`,
	`{"choices":[],"usage":{"prompt_tokens":012}}`,
	`{"choices":[],"usage":{"prompt_tokens":99999999999999999999}}`,
	`{"choices":[],"usage":{"Prompt_tokens":1}}`,
	`{"choices":[],"usage":{"prompt_tokens":1,"prompt_tokens":2}}`,
	`{"choices":[],"usage":{"prompt_tokens":null}}`,
	`{"choices":[],"usage":{"completion_tokens":2},"usage":null}`,
	`{"id":"cmpl-x","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" t","logprobs":null,"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":null,"tool_calls":[]},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":[ ]},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"content":{}}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a\"b\u00e9\n"}}]}`,
	`{"error":{"message":"x","code":500}}`,
	`{"error":null,"choices":[{"delta":{"content":"x"}}]}`,
	`{"choices":[{"delta":{"Content":"x"}}]}`,
	`{"Choices":[{"delta":{"content":"x"}}]}`,
	`{"choices":[{"delta":{"content":"x","content":""}}]}`,
	`{"choices":[{"delta":{"content":"x"}}],"choices":[{}]}`,
	`{"choices":[null,{"delta":{"content":"x"}}]}`,
	`{"choices":[{"delta":null,"finish_reason":"stop"}]}`,
	`{"choices":[{"delta":"x"}]}`,
	`{"choices":[{"finish_reason":5}]}`,
	`{"choices":[{"finish_reason":"st\u006fp"}]}`,
	`{"choices":[{"finish_reason":""}]}`,
	`{"choices":[{"finish_reason":"stop"},{"finish_reason":"length"}]}`,
	`{"choices":{}}`,
	`{"choices":null}`,
	`{"x":[1,-2.5e+3,0.1,true,false,null,{"y":"\\"}],"choices":[]}`,
	`{"x":01}`, `{"x":-}`, `{"x":1.}`, `{"x":"\q"}`, `{"x":"` + "\x01" + `"}`, `{"x":tru}`,
	`{"choices":[]} x`, `{"choices":[]}` + "\n ", `[]`, `"s"`, ``, `{`, `{"a"}`, `{"a":1,}`, `{,}`,
	`{"caf\u00e9":1}`, `{"café":1}`, `{"choice\u0073":[{"delta":{"content":"x"}}]}`,
	strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100),
	`{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}`,
	`{"object":"error","object":"chat.completion.chunk","choices":[]}`,
	`{"object":"chat.completion.chunk","object":"error"}`,
	`{"object":5,"choices":[]}`,
	`{"Object":"error"}`,
}

// checkChunk compares the fast path with encoding/json on one input: whenever the
// fast path answers, encoding/json must accept the input and agree.
func checkChunk(t *testing.T, in string) {
	t.Helper()
	fast, ok := fastChunk([]byte(in))
	slow, err := slowChunk([]byte(in))
	if !ok {
		return
	}
	if err != nil {
		t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", in, err)
	}
	if diff := cmp.Diff(slow, fast, cmp.AllowUnexported(chunkInfo{}, wireUsage{})); diff != "" {
		t.Fatalf("fast and encoding/json differ on %q (-json +fast):\n%s", in, diff)
	}
	full, err := parseChunk([]byte(in))
	if err != nil || !cmp.Equal(full, slow, cmp.AllowUnexported(chunkInfo{}, wireUsage{})) {
		t.Fatalf("parseChunk(%q) = %+v, %v", in, full, err)
	}
}

func TestFastChunkMatchesEncodingJSON(t *testing.T) {
	fastCount := 0
	for _, in := range chunkSeeds {
		checkChunk(t, in)
		if _, ok := fastChunk([]byte(in)); ok {
			fastCount++
		}
	}
	// The common shapes must take the fast path, or it is not worth having: the
	// first five, and a chunk with per-chunk usage.
	for _, in := range append(chunkSeeds[:5:5], chunkSeeds[7]) {
		if _, ok := fastChunk([]byte(in)); !ok {
			t.Errorf("common chunk %q fell back to encoding/json", in)
		}
	}
	// Random single-byte edits of every seed: the fast path either declines or agrees.
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]":,\ 0123456789.-+eEtrufalsn` + "\x00\x1f\x80abcCD")
	for range 20000 {
		b := []byte(chunkSeeds[rng.IntN(len(chunkSeeds))])
		for range 1 + rng.IntN(3) {
			if len(b) == 0 {
				break
			}
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b[i] = alphabet[rng.IntN(len(alphabet))]
			case 1:
				b = append(b[:i], b[i+1:]...)
			default:
				b = append(b[:i], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[i:]...)...)
			}
		}
		checkChunk(t, string(b))
	}
	t.Logf("%d of %d seeds on the fast path", fastCount, len(chunkSeeds))
}

func FuzzFastChunk(f *testing.F) {
	for _, s := range chunkSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { checkChunk(t, in) })
}
