package engine

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rigor-bench/rigor/plans"
)

// Manifest lists every artefact of a state directory with its size and sha256.
type Manifest struct {
	Artefacts []ManifestEntry `json:"artefacts"`
}

// ManifestEntry is one artefact and the step attempt that wrote it.
type ManifestEntry struct {
	Artefact
	Step    string `json:"step,omitempty"`
	Attempt int    `json:"attempt,omitempty"`
}

// writeManifest rebuilds manifest.json from the journal and the plan directory. It is
// an index: the journal's step_end records are the authority it is derived from.
func writeManifest(stateDir string, recs []Record) error {
	fixed, err := planArtefacts(stateDir)
	if err != nil {
		return err
	}
	return writeManifestEntries(stateDir, append(fixed, stepEntries(recs)...))
}

// planArtefacts hashes the frozen plan and the amendments: files that do not change
// while an apply runs, so the engine hashes them once per apply.
func planArtefacts(stateDir string) ([]ManifestEntry, error) {
	var out []ManifestEntry
	for _, dir := range []string{PlanDir, AmendmentsDir} {
		arts, err := hashArtefacts(stateDir, filepath.Join(stateDir, dir))
		if err != nil {
			return nil, err
		}
		for _, a := range arts {
			out = append(out, ManifestEntry{Artefact: a})
		}
	}
	return out, nil
}

// stepEntries lists the artefacts the step_end records in recs account for.
func stepEntries(recs []Record) []ManifestEntry {
	var out []ManifestEntry
	for _, r := range recs {
		if r.Kind == KindStepEnd {
			out = append(out, endEntries(r)...)
		}
	}
	return out
}

func endEntries(r Record) []ManifestEntry {
	out := make([]ManifestEntry, 0, len(r.Artefacts))
	for _, a := range r.Artefacts {
		out = append(out, ManifestEntry{Artefact: a, Step: r.Step, Attempt: r.Attempt})
	}
	return out
}

// writeManifestEntries writes manifest.json with the entries sorted by path.
func writeManifestEntries(stateDir string, entries []ManifestEntry) error {
	m := Manifest{Artefacts: append([]ManifestEntry{}, entries...)}
	sort.Slice(m.Artefacts, func(i, j int) bool { return m.Artefacts[i].Path < m.Artefacts[j].Path })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(stateDir, ManifestFile), append(b, '\n'))
}

// Problem is one discrepancy found by Verify.
type Problem struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// Verify re-hashes every artefact against the journal, walks the journal's hash
// chain, and reports stray files under attempts/. It returns every problem found.
func Verify(stateDir string) ([]Problem, error) {
	jpath := filepath.Join(stateDir, JournalFile)
	data, err := os.ReadFile(jpath)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	var problems []Problem
	recs, _, chain := verifyChain(data)
	for _, c := range chain {
		problems = append(problems, Problem{Path: JournalFile, Problem: c})
	}
	if len(recs) == 0 {
		problems = append(problems, Problem{Path: JournalFile, Problem: "journal holds no records"})
	}
	known := map[string]bool{}
	check := func(a Artefact, who string) {
		known[a.Path] = true
		abs := filepath.Join(stateDir, filepath.FromSlash(a.Path))
		info, err := os.Stat(abs)
		if err != nil {
			problems = append(problems, Problem{Path: a.Path, Problem: "missing (recorded by " + who + ")"})
			return
		}
		sum, err := plans.FileSHA256(abs)
		if err != nil {
			problems = append(problems, Problem{Path: a.Path, Problem: err.Error()})
			return
		}
		if sum != a.SHA256 {
			problems = append(problems, Problem{Path: a.Path, Problem: fmt.Sprintf("sha256 %s, journal recorded %s (%s)", sum, a.SHA256, who)})
		} else if info.Size() != a.Size {
			problems = append(problems, Problem{Path: a.Path, Problem: fmt.Sprintf("size %d, journal recorded %d", info.Size(), a.Size)})
		}
	}
	for _, r := range recs {
		if r.Kind == KindStepEnd {
			for _, a := range r.Artefacts {
				check(a, fmt.Sprintf("%s attempt %d", r.Step, r.Attempt))
			}
		}
	}
	// The frozen plan must still hash to what the journal froze.
	for _, r := range recs {
		if r.Kind == KindPlanFrozen {
			b, err := os.ReadFile(filepath.Join(stateDir, PlanDir, "plan.json"))
			if err != nil {
				problems = append(problems, Problem{Path: PlanDir + "/plan.json", Problem: "missing"})
			} else if plans.SHA256Hex(b) != r.PlanSHA256 {
				problems = append(problems, Problem{Path: PlanDir + "/plan.json", Problem: "does not hash to the frozen plan hash " + r.PlanSHA256})
			}
		}
	}
	// Files under attempts/ that no record accounts for were added afterwards, or
	// written by an attempt that never ended; either way the reviewer must know.
	open := map[string]bool{}
	for _, r := range recs {
		if r.Kind == KindStepStart {
			open[r.Dir] = true
		}
		if r.Kind == KindStepEnd && r.Attempt > 0 && len(r.Artefacts) > 0 {
			delete(open, r.Dir)
		}
	}
	_ = filepath.WalkDir(filepath.Join(stateDir, AttemptsDir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(stateDir, p)
		rel = filepath.ToSlash(rel)
		if known[rel] {
			return nil
		}
		for dir := range open {
			if strings.HasPrefix(rel, dir+"/") {
				problems = append(problems, Problem{Path: rel, Problem: "written by an attempt that never recorded its artefacts (crashed); not covered by any hash"})
				return nil
			}
		}
		problems = append(problems, Problem{Path: rel, Problem: "stray file: no journal record accounts for it"})
		return nil
	})
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Path < problems[j].Path })
	return problems, nil
}
