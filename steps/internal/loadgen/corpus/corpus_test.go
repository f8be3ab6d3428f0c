package corpus

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

func spec(kind, prefixes string, nominal int) Spec {
	return Spec{Kind: kind, Seed: 4342, NominalContext: nominal, Prefixes: prefixes}
}

func gen(t *testing.T, s Spec, i, r int) Prompt {
	t.Helper()
	p, err := Generate(s, i, r)
	if err != nil {
		t.Fatalf("Generate(%+v, %d, %d): %v", s, i, r, err)
	}
	return p
}

func TestSizing(t *testing.T) {
	for _, kind := range Kinds() {
		for _, nominal := range []int{128, 1024, 10240, 32768} {
			t.Run(kind+"/"+itoa(nominal), func(t *testing.T) {
				p := gen(t, spec(kind, PrefixUnique, nominal), 3, 1)
				counted := 0
				for _, m := range p.Messages {
					counted += tokens.Count(m.Content)
				}
				if counted != p.Tokens || tokens.Count(p.Text) != p.Tokens {
					t.Errorf("messages count %d, text count %d, Tokens %d: must agree", counted, tokens.Count(p.Text), p.Tokens)
				}
				want := 0.75 * float64(nominal)
				if math.Abs(float64(p.Tokens)-want)/want > 0.02 {
					t.Errorf("tokens = %d, want 0.75×%d = %.0f within 2%%", p.Tokens, nominal, want)
				}
			})
		}
	}
	// Seed 001/002: nominal 10240 gave about 7.7K actual tokens.
	if got := TargetTokens(10240); got != 7680 {
		t.Errorf("TargetTokens(10240) = %d, want 7680", got)
	}
}

func TestDeterminism(t *testing.T) {
	for _, kind := range Kinds() {
		s := spec(kind, PrefixUnique, 2048)
		a, b := gen(t, s, 5, 2), gen(t, s, 5, 2)
		if a.Text != b.Text || len(a.Messages) != 2 || a.Messages[1].Content != b.Messages[1].Content {
			t.Errorf("%s: same inputs gave different prompts", kind)
		}
		other := s
		other.Seed++
		if gen(t, other, 5, 2).Text == a.Text {
			t.Errorf("%s: changing the seed did not change the prompt", kind)
		}
	}
}

// firstBlock is the opening 16 tokens of the first message: the first prefix-cache
// block a server would hash (ignoring its chat template, which is common to all).
func firstBlock(p Prompt) string {
	return strings.Join(tokens.Split(p.Text)[:16], " ")
}

func TestPrefixModes(t *testing.T) {
	for _, kind := range Kinds() {
		t.Run(kind+"/unique", func(t *testing.T) {
			s := spec(kind, PrefixUnique, 1024)
			seen := map[string]string{}
			for i := range 40 {
				for r := range 3 {
					fb := firstBlock(gen(t, s, i, r))
					key := itoa(i) + "/" + itoa(r)
					if prev, dup := seen[fb]; dup {
						t.Fatalf("request %s shares its first block with %s", key, prev)
					}
					seen[fb] = key
				}
			}
		})
		t.Run(kind+"/repeated", func(t *testing.T) {
			s := spec(kind, PrefixRepeated, 1024)
			firsts := map[string]bool{}
			for i := range 40 {
				p0 := gen(t, s, i, 0)
				for r := 1; r < 3; r++ {
					if gen(t, s, i, r).Text != p0.Text {
						t.Fatalf("repetition %d of request %d differs from repetition 0", r, i)
					}
				}
				firsts[firstBlock(p0)] = true
			}
			// Repeated is warm across repetitions, not across requests of a block.
			if len(firsts) != 40 {
				t.Errorf("%d distinct first blocks over 40 requests, want 40", len(firsts))
			}
		})
	}
}

func TestKindsDiffer(t *testing.T) {
	a := gen(t, spec(KindSummary, PrefixUnique, 1024), 0, 0)
	b := gen(t, spec(KindRepeatedCode, PrefixUnique, 1024), 0, 0)
	if a.Text == b.Text || !strings.Contains(b.Text, "func handle") {
		t.Error("repeated-code corpus does not look like code")
	}
}

func TestValidate(t *testing.T) {
	cases := map[string]struct {
		s    Spec
		want error
		text string
	}{
		"unknown kind lists valid": {Spec{Kind: "natural", NominalContext: 1024, Prefixes: PrefixUnique}, ErrUnknownKind, "synthetic-repeated-code, synthetic-summary"},
		"unknown prefixes":         {Spec{Kind: KindSummary, NominalContext: 1024, Prefixes: "warm"}, ErrUnknownPrefix, "repeated, unique"},
		"too small":                {Spec{Kind: KindSummary, NominalContext: 64, Prefixes: PrefixUnique}, ErrTooSmall, "64"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Generate(tc.s, 0, 0)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Errorf("err = %v, want %v mentioning %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestHashes(t *testing.T) {
	base := spec(KindSummary, PrefixUnique, 10240)
	if base.Hash() != base.Hash() || len(base.Hash()) != 64 {
		t.Fatal("Hash is not a stable sha256 hex")
	}
	variants := map[string]Spec{
		"kind":     {KindRepeatedCode, base.Seed, base.NominalContext, base.Prefixes},
		"seed":     {base.Kind, 4642, base.NominalContext, base.Prefixes},
		"nominal":  {base.Kind, base.Seed, 32768, base.Prefixes},
		"prefixes": {base.Kind, base.Seed, base.NominalContext, PrefixRepeated},
	}
	for name, v := range variants {
		if v.Hash() == base.Hash() {
			t.Errorf("changing %s did not change Hash", name)
		}
	}
	c1, err := ContentHash(base, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	c2, _ := ContentHash(base, 4, 2)
	c3, _ := ContentHash(base, 5, 2)
	if c1 != c2 || c1 == c3 {
		t.Errorf("ContentHash not stable or not sensitive to request count: %s %s %s", c1, c2, c3)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
