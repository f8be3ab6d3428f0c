package report

import (
	"strings"
	"testing"
)

func digest(c byte) string { return strings.Repeat(string(c), 64) }

// withCorpus reads verdict-faster (evidence from before blocks recorded their corpus)
// and gives every block attempt the digest f returns for it, as result.json would.
func withCorpus(t *testing.T, f func(b *blockRef) string) *Report {
	t.Helper()
	ev, err := readEvidence("testdata/states/verdict-faster")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ev.blocks {
		for _, a := range b.attempts {
			if d := f(b); d != "" {
				a.corpus = &blockCorpus{Key: "corpus w c2 main", SHA256: d}
			}
		}
	}
	return ev.build()
}

// Every block row carries the digest of the corpus it sent, and each concurrency
// cell says whether every arm sent the identical corpus (seed 003's prompt
// reconstruction); a recorded difference makes the rule's comparison ineligible.
func TestCorpusIdenticalAcrossArms(t *testing.T) {
	r := withCorpus(t, func(*blockRef) string { return digest('a') })
	pr := r.Summary.PromptReconstruction
	if pr == nil || len(pr.Cells) != 1 || pr.Cells[0].Identical == nil || !*pr.Cells[0].Identical || len(pr.Cells[0].Arms) != 3 {
		t.Fatalf("prompt reconstruction: %+v", pr)
	}
	if want := "every arm (incumbent_before, candidate, incumbent_after) sent the identical corpus, sha256 " + digest('a'); pr.Cells[0].Statement != want {
		t.Errorf("statement %q", pr.Cells[0].Statement)
	}
	for _, row := range r.Summary.Rows {
		for _, b := range row.Blocks {
			if b.CorpusSHA256 != digest('a') {
				t.Errorf("%s: corpus_sha256 %q", b.Step, b.CorpusSHA256)
			}
		}
	}
	if !r.Summary.Promotion.Promoted {
		t.Errorf("identical corpora: %s", r.Summary.Promotion.Verdict)
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "| primary | 2 | incumbent_before, candidate, incumbent_after | "+digest('a')+" | yes |") || !strings.Contains(md, PromptScope) {
		t.Errorf("identities lack the corpus table:\n%s", md[strings.Index(md, "## Identities"):])
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatal(err)
	}

	// A cold lane: a new corpus every repetition, the same across arms.
	r = withCorpus(t, func(b *blockRef) string { return digest(byte('a' + b.Repetition)) })
	if c := r.Summary.PromptReconstruction.Cells[0]; c.Identical == nil || !*c.Identical || !strings.Contains(c.Statement, "at each repetition (5 distinct digests") {
		t.Errorf("cold lane: %+v", c)
	}

	// The candidate's r2 sent other prompts: not the same work.
	r = withCorpus(t, func(b *blockRef) string {
		if b.Addr == `block.primary["candidate/c2/r2"]` {
			return digest('b')
		}
		return digest('a')
	})
	c := r.Summary.PromptReconstruction.Cells[0]
	if c.Identical == nil || *c.Identical || !strings.Contains(c.Statement, "(r2: incumbent_before aaaaaaaaaaaa, candidate bbbbbbbbbbbb, incumbent_after aaaaaaaaaaaa): not the same work") {
		t.Errorf("differing corpus: %+v", c)
	}
	v := r.Summary.Promotion
	if v.Promoted || len(v.Comparisons) != 1 || !strings.Contains(v.Comparisons[0].Ineligible, "the compared arms did not send the identical corpus (r2: ") {
		t.Errorf("verdict with differing corpora: %s; %+v", v.Verdict, v.Comparisons)
	}
	if _, err := r.SummaryJSON(); err != nil {
		t.Fatal(err)
	}

	// A held campaign whose later arms have not run: the statement says so, and
	// claims no missing digest.
	ev, err := readEvidence("testdata/states/verdict-faster")
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ev.blocks {
		if strings.Contains(b.Addr, "candidate/") || strings.Contains(b.Addr, "incumbent_after/") {
			b.attempts = nil
			continue
		}
		for _, a := range b.attempts {
			a.corpus = &blockCorpus{Key: "corpus w c2 main", SHA256: digest('a')}
		}
	}
	if c := ev.build().Summary.PromptReconstruction.Cells[0]; c.Identical != nil || c.Statement != "not established: candidate, incumbent_after sent nothing at this concurrency yet" {
		t.Errorf("arms not run yet: %+v", c)
	}

	// Evidence without digests establishes nothing and voids nothing.
	r = withCorpus(t, func(*blockRef) string { return "" })
	if c := r.Summary.PromptReconstruction.Cells[0]; c.Identical != nil || !strings.HasPrefix(c.Statement, "not established: 15 block attempt(s)") || !r.Summary.Promotion.Promoted {
		t.Errorf("no digests: %+v; %s", c, r.Summary.Promotion.Verdict)
	}
}
