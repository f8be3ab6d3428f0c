package dataset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

func write(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func intp(v int) *int { return &v }

func TestPrompts(t *testing.T) {
	p := write(t, "p.jsonl", `{"prompt": "hello world"}

{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}], "max_tokens": 7}
`)
	src, err := Prompts(p)
	if err != nil {
		t.Fatal(err)
	}
	want := []loadgen.Input{
		{Messages: []corpus.Message{{Role: "user", Content: "hello world"}}, Text: "hello world"},
		{Messages: []corpus.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}, MaxTokens: intp(7)},
	}
	// Two inputs, cycled: request 2 sends input 0 again.
	for i, w := range append(want, want[0]) {
		got, err := src.Input(i)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(w, got); diff != "" {
			t.Errorf("input %d (-want +got):\n%s", i, diff)
		}
	}
	d := src.Describe()
	if d.Kind != KindPrompts || d.Distinct != 2 || src.Distinct() != 2 || len(d.FileSHA256) != 64 || d.Path != p {
		t.Errorf("describe %+v", d)
	}
}

func TestPromptsRefusesBadLines(t *testing.T) {
	cases := map[string]struct{ text, want string }{
		"unknown field":      {`{"prompt": "x", "output_len": 3}`, `p.jsonl:1: json: unknown field "output_len"`},
		"both":               {"{\"prompt\": \"x\"}\n{\"prompt\": \"x\", \"messages\": [{\"role\": \"user\", \"content\": \"y\"}]}", `p.jsonl:2: both "prompt" and "messages"`},
		"neither":            {`{"max_tokens": 3}`, `p.jsonl:1: neither "prompt" nor "messages"`},
		"empty prompt":       {`{"prompt": ""}`, `p.jsonl:1: empty "prompt"`},
		"empty message":      {`{"messages": [{"role": "user", "content": ""}]}`, `p.jsonl:1: message 1: want a non-empty role and content`},
		"bad max_tokens":     {`{"prompt": "x", "max_tokens": 0}`, `p.jsonl:1: "max_tokens" 0: want >= 1`},
		"not json":           {`prompt: x`, `p.jsonl:1: invalid character`},
		"two values":         {`{"prompt": "x"} {"prompt": "y"}`, `p.jsonl:1: more than one JSON value on the line`},
		"empty file":         {"\n\n", `has no prompts`},
		"a string, not text": {`{"prompt": 3}`, `p.jsonl:1: json: cannot unmarshal number`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Prompts(write(t, "p.jsonl", tc.text))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrDataset) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if _, err := Prompts(filepath.Join(t.TempDir(), "missing.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}

func TestShareGPT(t *testing.T) {
	p := write(t, "sg.json", `[
 {"id": "a", "conversations": [{"from": "human", "value": "first question"}, {"from": "gpt", "value": "answer"}]},
 {"id": "b", "conversations": [{"from": "human", "value": "lonely"}]},
 {"id": "c", "conversations": [{"from": "human", "value": "second"}, {"from": "gpt", "value": "x"}, {"from": "human", "value": "more"}]},
 {"id": "d", "conversations": []}
]`)
	src, err := ShareGPT(p)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := range 3 {
		in, _ := src.Input(i)
		got = append(got, in.Messages[0].Role+":"+in.Messages[0].Content)
	}
	if diff := cmp.Diff([]string{"user:first question", "user:second", "user:first question"}, got); diff != "" {
		t.Errorf("prompts (-want +got):\n%s", diff)
	}
	if d := src.Describe(); d.Distinct != 2 || d.Settings != (ShareGPTSettings{Entries: 4, Skipped: 2}) {
		t.Errorf("describe %+v", d)
	}
	for name, text := range map[string]string{
		"not an array":    `{"conversations": []}`,
		"no two turns":    `[{"conversations": [{"from": "human", "value": "x"}]}]`,
		"broken json":     `[{"conversations": [`,
		"wrong turn type": `[{"conversations": "x"}]`,
	} {
		if _, err := ShareGPT(write(t, "sg.json", text)); err == nil || !errors.Is(err, ErrDataset) {
			t.Errorf("%s: accepted (%v)", name, err)
		}
	}
}

func TestRandom(t *testing.T) {
	s := RandomSettings{InputLen: 100, OutputLen: 20, RangeRatio: 0.5, Seed: 7}
	src, err := Random(s)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Random(s)
	inLens, outLens := map[int]bool{}, map[int]bool{}
	for i := range 200 {
		in, err := src.Input(i)
		if err != nil {
			t.Fatal(err)
		}
		n := tokens.Count(in.Messages[0].Content)
		if n < 50 || n > 150 || *in.MaxTokens < 10 || *in.MaxTokens > 30 || in.Text != in.Messages[0].Content {
			t.Fatalf("input %d: %d tokens, max_tokens %d; want 50..150 and 10..30", i, n, *in.MaxTokens)
		}
		inLens[n], outLens[*in.MaxTokens] = true, true
		if b, _ := again.Input(i); !cmp.Equal(b, in) {
			t.Fatalf("input %d differs between two sources with the same settings", i)
		}
	}
	if len(inLens) < 30 || len(outLens) < 10 {
		t.Errorf("%d input and %d output lengths over 200 requests: the range is not used", len(inLens), len(outLens))
	}
	// Range 0: every request the exact lengths.
	exact, _ := Random(RandomSettings{InputLen: 64, OutputLen: 8, Seed: 1})
	for i := range 20 {
		in, _ := exact.Input(i)
		if n := tokens.Count(in.Text); n != 64 || *in.MaxTokens != 8 {
			t.Errorf("input %d: %d tokens, max_tokens %d; want 64 and 8", i, n, *in.MaxTokens)
		}
	}
	a, _ := exact.Input(0)
	b, _ := exact.Input(1)
	if a.Text[:40] == b.Text[:40] {
		t.Error("two random prompts open alike; they must not share a prefix")
	}
	for _, bad := range []RandomSettings{{InputLen: 0, OutputLen: 1}, {InputLen: 1, OutputLen: 0}, {InputLen: 1, OutputLen: 1, RangeRatio: 1}} {
		if _, err := Random(bad); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// TestDigest: the digest of a source names exactly the inputs sent; a corpus's is
// the corpus digest the block step pins.
func TestDigest(t *testing.T) {
	src, _ := Random(RandomSettings{InputLen: 16, OutputLen: 4, Seed: 1})
	d1, _ := loadgen.Digest(src, 5)
	d2, _ := loadgen.Digest(src, 5)
	d6, _ := loadgen.Digest(src, 6)
	other, _ := Random(RandomSettings{InputLen: 16, OutputLen: 4, Seed: 2})
	do, _ := loadgen.Digest(other, 5)
	off, _ := loadgen.Digest(loadgen.Offset{Src: src, N: 5}, 5)
	if d1 != d2 || d1 == d6 || d1 == do || d1 == off || len(d1) != 64 {
		t.Errorf("digests %s %s %s %s %s", d1, d2, d6, do, off)
	}
	id := corpus.ID{Spec: corpus.Spec{Kind: corpus.KindSummary, Seed: 1, NominalContext: 256, Prefixes: corpus.PrefixUnique}, Cell: "c1", Lane: corpus.LaneMain}
	want, _ := corpus.Digest(id, 3)
	if got, _ := loadgen.Digest(loadgen.CorpusSource{ID: id}, 3); got != want {
		t.Errorf("corpus source digest %s, corpus digest %s", got, want)
	}
}
