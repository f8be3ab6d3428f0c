package corpus

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

func id(kind, prefixes string, nominal int) ID {
	return ID{Spec: Spec{Kind: kind, Seed: 4342, NominalContext: nominal, Prefixes: prefixes}, Cell: "c1", Lane: LaneMain}
}

func gen(t *testing.T, c ID, i int) Prompt {
	t.Helper()
	p, err := c.Prompt(i)
	if err != nil {
		t.Fatalf("Prompt(%+v, %d): %v", c, i, err)
	}
	return p
}

func TestSizing(t *testing.T) {
	for _, kind := range Kinds() {
		for _, prefixes := range []string{PrefixUnique, PrefixRepeated} {
			for _, nominal := range []int{128, 1024, 10240, 32768} {
				t.Run(kind+"/"+prefixes+"/"+itoa(nominal), func(t *testing.T) {
					p := gen(t, id(kind, prefixes, nominal), 3)
					counted := 0
					for _, m := range p.Messages {
						counted += tokens.Count(m.Content)
					}
					if counted != p.Tokens || tokens.Count(p.Text) != p.Tokens {
						t.Errorf("messages count %d, text count %d, Tokens %d: must agree", counted, tokens.Count(p.Text), p.Tokens)
					}
					if want := TargetTokens(nominal); p.Tokens != want {
						t.Errorf("tokens = %d, want exactly round(0.75×%d) = %d", p.Tokens, nominal, want)
					}
				})
			}
		}
	}
	// Seed 001/002: nominal 10240 gave about 7.7K actual tokens.
	if got := TargetTokens(10240); got != 7680 {
		t.Errorf("TargetTokens(10240) = %d, want 7680", got)
	}
}

func TestDeterminism(t *testing.T) {
	for _, kind := range Kinds() {
		c := id(kind, PrefixUnique, 2048)
		a, b := gen(t, c, 5), gen(t, c, 5)
		if a.Text != b.Text || len(a.Messages) != 2 || a.Messages[1].Content != b.Messages[1].Content {
			t.Errorf("%s: same inputs gave different prompts", kind)
		}
		other := c
		other.Seed++
		if gen(t, other, 5).Text == a.Text {
			t.Errorf("%s: changing the seed did not change the prompt", kind)
		}
	}
}

// firstBlock is the opening 16 tokens of the prompt: the first prefix-cache block a
// server would hash (ignoring its chat template, which is common to all).
func firstBlock(p Prompt) string {
	return strings.Join(tokens.Split(p.Text)[:16], " ")
}

// sharedPrefix is the number of leading tokens a and b have in common.
func sharedPrefix(a, b Prompt) int {
	ta, tb := tokens.Split(a.Text), tokens.Split(b.Text)
	n := 0
	for n < len(ta) && n < len(tb) && ta[n] == tb[n] {
		n++
	}
	return n
}

// TestCorporaAreDisjoint holds the identity of a corpus to what it renders: every
// prompt of every unique corpus below (two cells, two lanes, two workloads that differ
// only in nominal context, three repetitions of a cold lane) opens with a first block
// no other prompt has, so no prompt can be served from a cache another one filled.
func TestCorporaAreDisjoint(t *testing.T) {
	base := id(KindSummary, PrefixUnique, 1024)
	var corpora []ID
	for _, cell := range []string{"c1", "c4"} {
		for _, lane := range []string{LaneMain, LanePilot} {
			c := base
			c.Cell, c.Lane = cell, lane
			corpora = append(corpora, c)
		}
	}
	wider := base
	wider.NominalContext = 2048
	corpora = append(corpora, wider)
	for r := range 3 {
		cold := base
		cold.Fresh, cold.Repetition = true, r
		corpora = append(corpora, cold)
	}
	seen := map[string]string{}
	for _, c := range corpora {
		for i := range 20 {
			fb := firstBlock(gen(t, c, i))
			key := c.String() + "/" + itoa(i)
			if prev, dup := seen[fb]; dup {
				t.Fatalf("prompt %s shares its first block with %s", key, prev)
			}
			seen[fb] = key
		}
	}
}

func TestRepetitionsShareTheCorpusUnlessCold(t *testing.T) {
	for _, prefixes := range []string{PrefixUnique, PrefixRepeated} {
		t.Run(prefixes, func(t *testing.T) {
			warm := id(KindSummary, prefixes, 1024)
			cold := warm
			cold.Fresh = true
			for i := range 5 {
				r0, r2 := warm, warm
				r2.Repetition = 2
				if gen(t, r0, i).Text != gen(t, r2, i).Text {
					t.Errorf("request %d: repetition 2 differs from repetition 0 outside a cold lane", i)
				}
				c0, c2 := cold, cold
				c2.Repetition = 2
				if gen(t, c0, i).Text == gen(t, c2, i).Text {
					t.Errorf("request %d: a cold lane sent repetition 0's prompt again", i)
				}
			}
			d0, _ := Digest(warm, 8)
			w2 := warm
			w2.Repetition = 2
			if d2, _ := Digest(w2, 8); d2 != d0 {
				t.Error("the digest of a warm corpus depends on the repetition")
			}
		})
	}
}

func TestRepeatedPrefixesAreShared(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(kind, func(t *testing.T) {
			c := id(kind, PrefixRepeated, 10240)
			p0 := gen(t, c, 0)
			target := TargetTokens(c.NominalContext)
			wantShared := target - int(math.Round(RepeatedDistinctShare*float64(target))) - tokens.Count(kindTexts(kind, 0).tail)
			for i := 1; i < 6; i++ {
				pi := gen(t, c, i)
				if pi.Text == p0.Text {
					t.Fatalf("request %d repeats request 0 entirely", i)
				}
				// Everything up to the per-request note is common ("Reviewer note 0:"
				// and "... note 1:" share the word before the index).
				n := sharedPrefix(p0, pi)
				if n < wantShared || n > wantShared+2 {
					t.Errorf("request %d shares %d leading tokens with request 0, want about %d of %d", i, n, wantShared, target)
				}
			}
			// A repeated corpus still differs between cells: C4 never replays C1.
			c4 := c
			c4.Cell = "c4"
			if n := sharedPrefix(p0, gen(t, c4, 0)); n > 2 {
				t.Errorf("c1 and c4 repeated corpora share %d leading tokens", n)
			}
		})
	}
}

func TestKindsDiffer(t *testing.T) {
	a := gen(t, id(KindSummary, PrefixUnique, 1024), 0)
	b := gen(t, id(KindRepeatedCode, PrefixUnique, 1024), 0)
	if a.Text == b.Text || !strings.Contains(b.Text, "func handle") {
		t.Error("repeated-code corpus does not look like code")
	}
}

func TestValidate(t *testing.T) {
	good := id(KindSummary, PrefixUnique, 1024)
	with := func(f func(*ID)) ID { c := good; f(&c); return c }
	cases := map[string]struct {
		c    ID
		want error
		text string
	}{
		"unknown kind lists valid": {with(func(c *ID) { c.Kind = "natural" }), ErrUnknownKind, "synthetic-repeated-code, synthetic-summary"},
		"unknown prefixes":         {with(func(c *ID) { c.Prefixes = "warm" }), ErrUnknownPrefix, "repeated, unique"},
		"too small":                {with(func(c *ID) { c.NominalContext = 64 }), ErrTooSmall, "64"},
		"cell":                     {with(func(c *ID) { c.Cell = "4" }), ErrBadID, `cell "4"`},
		"lane":                     {with(func(c *ID) { c.Lane = "warmup" }), ErrBadID, `lane "warmup"`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := tc.c.Prompt(0)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.text)
			}
			if _, err := Digest(tc.c, 1); !errors.Is(err, tc.want) {
				t.Errorf("Digest err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestDigest(t *testing.T) {
	base := id(KindSummary, PrefixUnique, 10240)
	d, err := Digest(base, 4)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := Digest(base, 4); again != d || len(d) != 64 {
		t.Fatalf("Digest is not a stable sha256 hex: %s %s", d, again)
	}
	variants := map[string]func(*ID){
		"kind":     func(c *ID) { c.Kind = KindRepeatedCode },
		"seed":     func(c *ID) { c.Seed = 4642 },
		"nominal":  func(c *ID) { c.NominalContext = 32768 },
		"prefixes": func(c *ID) { c.Prefixes = PrefixRepeated },
		"fresh":    func(c *ID) { c.Fresh = true },
		"cell":     func(c *ID) { c.Cell = "c4" },
		"lane":     func(c *ID) { c.Lane = LanePilot },
	}
	for name, f := range variants {
		v := base
		f(&v)
		if dv, _ := Digest(v, 4); dv == d {
			t.Errorf("changing %s did not change the digest", name)
		}
	}
	if d5, _ := Digest(base, 5); d5 == d {
		t.Error("the digest does not depend on the number of prompts")
	}
	if _, err := Digest(base, 0); !errors.Is(err, ErrBadID) {
		t.Errorf("Digest of 0 prompts: %v", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
