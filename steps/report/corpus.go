package report

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PromptScope says what a corpus digest proves, and what it does not (seed 003's
// prompt_reconstruction scope).
const PromptScope = "Each block records corpus.Digest of the prompts it rendered (the generator version, the corpus identity and every message of every prompt, in index order) in result.json. Equal digests prove the arms of a cell were given identical source prompts; they do not prove the bytes transmitted on the wire or the server's chat-template serialization."

// PromptReconstruction is summary.json's statement, per concurrency cell of each
// matrix, of whether every arm sent the identical corpus (seed 003's
// prompt_reconstruction).
type PromptReconstruction struct {
	Scope string       `json:"scope"`
	Cells []CorpusCell `json:"cells"`
}

// CorpusCell is one concurrency cell of a matrix, across its arms.
type CorpusCell struct {
	Matrix      string      `json:"matrix"`
	Concurrency int         `json:"concurrency"`
	Arms        []CorpusArm `json:"arms"`
	// Identical is true when every block attempt with records recorded a digest and,
	// repetition by repetition (priming included), every arm's digest is the same;
	// false when two arms recorded different digests for one repetition; null when a
	// digest is missing and none differs.
	Identical *bool  `json:"identical"`
	Statement string `json:"statement"`
	// byRep maps repetition (0: priming) to arm to the digests its attempts recorded.
	byRep map[int]map[string][]string
}

// CorpusArm is what one arm's block attempts at a concurrency recorded.
type CorpusArm struct {
	Arm    string   `json:"arm"`
	SHA256 []string `json:"sha256"` // distinct, in plan order
	// Missing counts the attempts with records whose result.json gave no digest.
	Missing int `json:"missing"`
}

// corpusKey names a matrix's cell of one concurrency, for every arm: the key of
// evidence.corpora.
func corpusKey(matrix string, conc int) string { return fmt.Sprintf("%s/c%d", matrix, conc) }

// promptReconstruction gathers the corpus digests of every matrix block attempt
// that left records; nil when the plan has no matrix.
func (ev *evidence) promptReconstruction() *PromptReconstruction {
	if len(ev.cells) == 0 {
		return nil
	}
	pr := &PromptReconstruction{Scope: PromptScope, Cells: []CorpusCell{}}
	index := map[string]int{}
	for _, c := range ev.cells {
		key := corpusKey(c.Matrix, c.Conc)
		i, ok := index[key]
		if !ok {
			i = len(pr.Cells)
			index[key] = i
			pr.Cells = append(pr.Cells, CorpusCell{Matrix: c.Matrix, Concurrency: c.Conc, Arms: []CorpusArm{}, byRep: map[int]map[string][]string{}})
		}
		cc := &pr.Cells[i]
		arm := CorpusArm{Arm: c.Arm, SHA256: []string{}}
		for _, b := range c.Blocks {
			rep := b.Repetition
			if !b.measured() {
				rep = 0
			}
			for _, a := range b.population() {
				if a.corpus == nil || a.corpus.SHA256 == "" {
					arm.Missing++
					continue
				}
				if !slices.Contains(arm.SHA256, a.corpus.SHA256) {
					arm.SHA256 = append(arm.SHA256, a.corpus.SHA256)
				}
				if cc.byRep[rep] == nil {
					cc.byRep[rep] = map[string][]string{}
				}
				if !slices.Contains(cc.byRep[rep][c.Arm], a.corpus.SHA256) {
					cc.byRep[rep][c.Arm] = append(cc.byRep[rep][c.Arm], a.corpus.SHA256)
				}
			}
		}
		cc.Arms = append(cc.Arms, arm)
	}
	for i := range pr.Cells {
		pr.Cells[i].judge()
	}
	ev.corpora = map[string]*CorpusCell{}
	for k, i := range index {
		ev.corpora[k] = &pr.Cells[i]
	}
	return pr
}

// same says whether the named arms sent the identical corpus, repetition by
// repetition: known is false when an arm recorded no digest and none differs.
// differ names the first repetition where two digests differ.
func (cc *CorpusCell) same(arms ...string) (same, known bool, differ string) {
	missing := false
	for _, a := range cc.Arms {
		if slices.Contains(arms, a.Arm) && (a.Missing > 0 || len(a.SHA256) == 0) {
			missing = true
		}
	}
	for _, rep := range slices.Sorted(maps.Keys(cc.byRep)) {
		var seen []string
		var parts []string
		for _, arm := range arms {
			for _, d := range cc.byRep[rep][arm] {
				parts = append(parts, arm+" "+short(d))
				if !slices.Contains(seen, d) {
					seen = append(seen, d)
				}
			}
		}
		if len(seen) > 1 {
			label := fmt.Sprintf("r%d", rep)
			if rep == 0 {
				label = "priming"
			}
			return false, true, label + ": " + strings.Join(parts, ", ")
		}
	}
	return !missing, !missing, ""
}

// judge sets Identical and the statement over every arm of the cell.
func (cc *CorpusCell) judge() {
	var arms, notRun []string
	missing := 0
	var digests []string
	for _, a := range cc.Arms {
		arms = append(arms, a.Arm)
		missing += a.Missing
		if a.Missing == 0 && len(a.SHA256) == 0 {
			notRun = append(notRun, a.Arm)
		}
		for _, d := range a.SHA256 {
			if !slices.Contains(digests, d) {
				digests = append(digests, d)
			}
		}
	}
	same, known, differ := cc.same(arms...)
	switch {
	case known && !same:
		f := false
		cc.Identical = &f
		cc.Statement = "the arms did not send the identical corpus (" + differ + "): not the same work"
	case len(digests) == 0 && missing == 0:
		cc.Statement = "no block has run"
	case !known:
		var why []string
		if len(notRun) > 0 {
			why = append(why, fmt.Sprintf("%s sent nothing at this concurrency yet", strings.Join(notRun, ", ")))
		}
		if missing > 0 {
			why = append(why, fmt.Sprintf("%d block attempt(s) with records kept no corpus digest in result.json", missing))
		}
		cc.Statement = "not established: " + strings.Join(why, "; ")
	case len(digests) == 1:
		t := true
		cc.Identical = &t
		cc.Statement = fmt.Sprintf("every arm (%s) sent the identical corpus, sha256 %s", strings.Join(arms, ", "), digests[0])
	default:
		t := true
		cc.Identical = &t
		cc.Statement = fmt.Sprintf("every arm (%s) sent the identical corpus at each repetition (%d distinct digests over the repetitions: a cold lane renders new prompts every repetition)", strings.Join(arms, ", "), len(digests))
	}
}
