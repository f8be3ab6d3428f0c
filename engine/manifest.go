package engine

import (
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"sort"
	"strings"
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

// journalFile is one file the journal accounts for, and the record that does.
type journalFile struct {
	ManifestEntry
	rec *Record
	// legacy: the record predates file hashes in plan_frozen and amendment
	// records, so the entry was hashed from the file on disk and proves nothing
	// about it.
	legacy bool
}

// journalFiles lists every file the journal accounts for, in record order: the
// files the plan_frozen and amendment records wrote, and every record's artefacts
// (step_end's, and those of kinds this version does not know). This is the one
// definition of what manifest.json holds; the engine writes it and Verify checks it.
func journalFiles(stateDir string, recs []Record) ([]journalFile, error) {
	var out []journalFile
	for i := range recs {
		r := &recs[i]
		legacy := len(r.Artefacts) == 0 && (r.Kind == KindPlanFrozen || r.Kind == KindAmendment)
		entries := endEntries(*r)
		if legacy {
			arts, err := legacyFiles(stateDir, r)
			if err != nil {
				return nil, err
			}
			entries = endEntries(Record{Artefacts: arts})
		}
		for _, e := range entries {
			out = append(out, journalFile{ManifestEntry: e, rec: r, legacy: legacy})
		}
	}
	return out, nil
}

// legacyFiles hashes, as they are now, the files an older rigor wrote for a
// plan_frozen or amendment record without recording their hashes.
func legacyFiles(stateDir string, r *Record) ([]Artefact, error) {
	if r.Kind == KindPlanFrozen {
		arts, err := hashArtefacts(stateDir, filepath.Join(stateDir, PlanDir))
		var out []Artefact
		for _, a := range arts {
			if legacyPlanFile(a.Path) {
				out = append(out, a)
			}
		}
		return out, err
	}
	var out []Artefact
	for _, p := range []string{amendmentFile(r.Amendment), amendmentSources(r.Amendment)} {
		arts, err := hashArtefacts(stateDir, filepath.Join(stateDir, filepath.FromSlash(p)))
		if err != nil {
			return nil, err
		}
		out = append(out, arts...)
	}
	return out, nil
}

// legacyPlanFile: the files freeze has always written under plan/.
func legacyPlanFile(p string) bool {
	switch p {
	case PlanDir + "/frozen.hcl", PlanDir + "/plan.json", PlanDir + "/plan.sha256":
		return true
	}
	return strings.HasPrefix(p, PlanDir+"/src/") && path.Dir(p) == PlanDir+"/src"
}

// amendmentFile and amendmentSources are amendment n's paths, relative to the
// state directory with forward slashes.
func amendmentFile(n int) string    { return fmt.Sprintf("%s/%04d.json", AmendmentsDir, n) }
func amendmentSources(n int) string { return fmt.Sprintf("%s/%04d", AmendmentsDir, n) }

func manifestOf(files []journalFile) []ManifestEntry {
	out := make([]ManifestEntry, len(files))
	for i, f := range files {
		out[i] = f.ManifestEntry
	}
	return out
}

// writeManifest rebuilds manifest.json from the journal: it is an index, and the
// journal is the authority it is derived from.
func writeManifest(stateDir string, recs []Record) error {
	files, err := journalFiles(stateDir, recs)
	if err != nil {
		return err
	}
	return writeManifestEntries(stateDir, manifestOf(files))
}

// planArtefacts lists the files of the frozen plan and the amendments, as the
// journal on disk records them: files that do not change while an apply runs, so
// the engine reads them once per apply.
func planArtefacts(stateDir string) ([]ManifestEntry, error) {
	recs, _, err := ReadJournal(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return nil, err
	}
	var plan []Record
	for _, r := range recs {
		if isPlanRecord(r) {
			plan = append(plan, r)
		}
	}
	files, err := journalFiles(stateDir, plan)
	return manifestOf(files), err
}

func isPlanRecord(r Record) bool { return r.Kind == KindPlanFrozen || r.Kind == KindAmendment }

// stepEntries lists the artefacts of every record in recs other than the plan's
// (planArtefacts has those): step_end's, and any other kind's.
func stepEntries(recs []Record) []ManifestEntry {
	var out []ManifestEntry
	for _, r := range recs {
		if !isPlanRecord(r) {
			out = append(out, endEntries(r)...)
		}
	}
	return out
}

// endEntries is the manifest entries of one record's artefacts.
func endEntries(r Record) []ManifestEntry {
	out := make([]ManifestEntry, 0, len(r.Artefacts))
	for _, a := range r.Artefacts {
		out = append(out, ManifestEntry{Artefact: a, Step: r.Step, Attempt: r.Attempt})
	}
	return out
}

// renderManifest is manifest.json's exact bytes for these entries, sorted by path.
func renderManifest(entries []ManifestEntry) ([]byte, error) {
	m := Manifest{Artefacts: append([]ManifestEntry{}, entries...)}
	sort.SliceStable(m.Artefacts, func(i, j int) bool { return m.Artefacts[i].Path < m.Artefacts[j].Path })
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// writeManifestEntries writes manifest.json with the entries sorted by path.
func writeManifestEntries(stateDir string, entries []ManifestEntry) error {
	b, err := renderManifest(entries)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(stateDir, ManifestFile), b)
}
