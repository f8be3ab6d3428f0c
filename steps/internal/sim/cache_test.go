package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

func TestPrefixCacheBlocks(t *testing.T) {
	words := func(tag string, n int) []string { return tokens.Split(promptOf(tag, n)) }
	concat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	type step struct {
		toks       []string
		wantCached int
	}
	cases := map[string]struct {
		capTokens int
		steps     []step
	}{
		"repeat reuses all full blocks but the last token's": {1 << 20, []step{
			{words("a", 100), 0},
			{words("a", 100), 96}, // 6 full blocks of 16; the 4-token tail is never cached
		}},
		"block-aligned repeat recomputes its last block": {1 << 20, []step{
			{words("a", 64), 0},
			{words("a", 64), 48},
		}},
		"shared prefix reuses whole shared blocks only": {1 << 20, []step{
			{concat(words("s", 40), words("x", 30)), 0},
			{concat(words("s", 40), words("y", 30)), 32},
		}},
		"unique prompts share nothing": {1 << 20, []step{
			{words("u", 200), 0},
			{words("v", 200), 0},
		}},
		"a changed first token breaks the chain": {1 << 20, []step{
			{words("a", 80), 0},
			{concat([]string{"changed"}, words("a", 80)[1:]), 0},
		}},
		"LRU evicts the tails of older prompts first": {20 * 16, []step{
			{words("a", 18*16+5), 0},
			{words("b", 18*16+5), 0},   // evicts 16 of a's blocks, its tail first
			{words("a", 18*16+5), 32},  // a's first two blocks survived
			{words("b", 18*16+5), 32},  // and a's comeback evicted b's tail
			{words("b", 18*16+5), 288}, // b is whole again
		}},
		"disabled cache never hits": {0, []step{
			{words("a", 100), 0},
			{words("a", 100), 0},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := newPrefixCache(tc.capTokens, 16)
			for i, s := range tc.steps {
				got := c.acquire(hashBlocks(s.toks, 16), len(s.toks))
				if got != s.wantCached {
					t.Errorf("step %d: cached %d tokens, want %d", i, got, s.wantCached)
				}
				if c.usedTokens() > tc.capTokens {
					t.Errorf("step %d: cache holds %d tokens over capacity %d", i, c.usedTokens(), tc.capTokens)
				}
			}
		})
	}
}

func TestHashBlocksSeparatesTokens(t *testing.T) {
	a := hashBlocks([]string{"ab", "c"}, 2)
	b := hashBlocks([]string{"a", "bc"}, 2)
	if a[0] == b[0] {
		t.Error(`"ab c" and "a bc" hash alike`)
	}
}

// The server reports cached_tokens from the same cache, with the chat template's role
// markers in the hashed sequence.
func TestCachedTokensOnTheWire(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale, PrefixCacheTokens: 20 * 16})
	system := promptOf("sys", 100)
	chat := func(sys, user string) chatBody {
		sb, _ := json.Marshal(sys)
		ub, _ := json.Marshal(user)
		b := streamChat("", 2000)
		b.Messages = []wireMessage{{Role: "system", Content: sb}, {Role: "user", Content: ub}}
		return b
	}
	cases := []struct {
		name string
		body chatBody
		want int
	}{
		{"first sight", chat(system, promptOf("q", 50)), 0},
		// <|system|> + 100 words + <|user|> are shared: 102 tokens, 6 whole blocks.
		{"same system, new question", chat(system, promptOf("r", 50)), 96},
		{"unique", chat(promptOf("z", 100), promptOf("r", 50)), 0},
		// 153 tokens: (153-1)/16 = 9 blocks; only 20 fit, so "unique" pushed out some of these.
		{"exact repeat", chat(system, promptOf("r", 50)), 144},
	}
	for _, tc := range cases {
		res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "", tc.body)
		if err != nil {
			t.Fatal(err)
		}
		if res.usage == nil {
			t.Fatalf("%s: no usage", tc.name)
		}
		if got := res.usage.PromptTokensDetails.CachedTokens; got != tc.want {
			t.Errorf("%s: cached_tokens = %d, want %d (prompt %d)", tc.name, got, tc.want, res.usage.PromptTokens)
		}
	}
	if ev := rn.Server().Stats().PrefixCacheEvictions; ev == 0 {
		t.Error("no evictions recorded past capacity")
	}
	if !strings.HasPrefix(rn.URL(), "http://127.0.0.1:") {
		t.Errorf("URL %q", rn.URL())
	}
}

// TestFlareCacheHoldsTheC1CorpusNotTheC4 holds flare-wave1's comment to the flare
// profile's cache: after priming, a repetition of the C1 corpus (52 prompts of
// 7,683 tokens, seed 001's frozen count) finds every prompt cached, while the C4
// corpus (160 such prompts, 1.23M tokens against a 998,210-token cache) finds none:
// an LRU read in order through more than it holds evicts each prompt before its
// turn comes again.
func TestFlareCacheHoldsTheC1CorpusNotTheC4(t *testing.T) {
	prof, err := LookupProfile("flare")
	if err != nil {
		t.Fatal(err)
	}
	const promptTokens = 7683
	repetition := func(prompts int) []int {
		c := newPrefixCache(prof.PrefixCacheTokens, prof.BlockSize)
		hashes := make([][]uint64, prompts)
		for i := range hashes {
			toks := make([]string, promptTokens)
			for j := range toks {
				toks[j] = fmt.Sprintf("p%d-t%d", i, j)
			}
			hashes[i] = hashBlocks(toks, prof.BlockSize)
			c.acquire(hashes[i], promptTokens) // priming
		}
		cached := make([]int, prompts)
		for i := range hashes {
			cached[i] = c.acquire(hashes[i], promptTokens)
		}
		return cached
	}
	for i, n := range repetition(52) {
		if n != 7680 {
			t.Fatalf("C1 prompt %d: %d tokens cached, want 7680 (all its full blocks but the last token's)", i, n)
		}
	}
	for i, n := range repetition(160) {
		if n != 0 {
			t.Fatalf("C4 prompt %d: %d tokens cached, want 0 (evicted before its turn)", i, n)
		}
	}
}
