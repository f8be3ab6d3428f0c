package engine

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/rigor-bench/rigor/engine/internal/sshsig"
	"github.com/rigor-bench/rigor/engine/procgroup"
	"github.com/rigor-bench/rigor/plans"
)

// What a state directory may hold at its root. Everything else is a stray.
const (
	// ReportDir holds what `rigor report` derives from the evidence. It is not
	// evidence: Verify lists its files as derived and checks none of their bytes.
	ReportDir = "report"
	// SignaturesDir holds signed journal heads (see SignHead).
	SignaturesDir = "signatures"
	lockPidFile   = lockFile + ".pid"
)

// Problem is one discrepancy found by Verify: the path it concerns, and what is wrong.
type Problem struct {
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// VerifyOptions are the anchors Verify checks the journal against, beyond its own
// hash chain (which a forger can recompute).
type VerifyOptions struct {
	// Head is a head written down earlier, "SEQ:SHA256" or the SHA256 alone: the
	// record it names must still be in the chain, at that position.
	Head string
	// AllowedSigners is the path of an OpenSSH allowed_signers file. When set,
	// every signature under signatures/ must be by a key it lists for the
	// namespace SignatureNamespace, and there must be at least one.
	AllowedSigners string
}

// ErrVerifyUsage wraps an option Verify cannot use: an unparseable head, or an
// allowed_signers file that cannot be read or parsed.
var ErrVerifyUsage = errors.New("invalid verify option")

// SignatureCheck is one signature Verify checked.
type SignatureCheck struct {
	Path string `json:"path"`
	Head Head   `json:"head"`
	// Key is the signing key's type and SHA256 fingerprint.
	Key string `json:"key"`
	// Principals are the allowed_signers principals of the key; empty when no
	// allowed_signers file was given, so only the signature's own key was checked.
	Principals string `json:"principals,omitempty"`
}

// VerifyReport is what Verify covered and every problem it found.
type VerifyReport struct {
	// Head is the journal's last record as read (its chain may still be broken:
	// see Problems).
	Head    Head `json:"head"`
	Records int  `json:"records"`
	// Files counts the files whose every byte was compared with a sha256 in the
	// journal: plan/, amendments/ and attempts/.
	Files int `json:"files"`
	// ManifestEntries is the number of entries of a manifest.json that matches the
	// journal byte for byte; 0 when it does not.
	ManifestEntries int `json:"manifest_entries"`
	// HeadFound is the record --head named, when it is in the chain.
	HeadFound  *Head            `json:"head_found,omitempty"`
	Signatures []SignatureCheck `json:"signatures,omitempty"`
	// Derived lists the files under report/: derived by `rigor report`, not evidence.
	Derived []string `json:"derived,omitempty"`
	// Notes say what was not covered, and why, without being a problem.
	Notes    []string  `json:"notes,omitempty"`
	Problems []Problem `json:"problems"`
}

// Verify checks a state directory with no external anchor and returns its problems.
func Verify(stateDir string) ([]Problem, error) {
	rep, err := VerifyState(stateDir, VerifyOptions{})
	if err != nil {
		return nil, err
	}
	return rep.Problems, nil
}

// verifier accumulates one verification.
type verifier struct {
	dir    string
	rep    *VerifyReport
	known  map[string]string // path -> the record that accounts for it
	open   map[string]string // attempt dir -> its step_start, while no step_end closed it
	dirs   map[string]bool   // directories some record names or implies
	sigs   map[string]bool   // files under signatures/ that checkSignatures accounted for
	holder int               // pid of a live rigor process holding the lock, or 0
}

// VerifyState checks every byte of a state directory against its journal:
//   - journal.jsonl: every line parses, follows in seq, and carries the hash of the
//     line before; with opts.Head, the named record is still there, unchanged;
//   - every file a record accounts for (plan_frozen: plan/; amendment: its
//     NNNN.json and NNNN/ sources; step_end: the attempt's files) exists and has
//     the recorded size and sha256; plan/plan.json and plan/plan.sha256 hold the
//     frozen plan hash; each amendment file is the amendment its record names;
//   - manifest.json is exactly the index the journal implies, and any difference
//     is named entry by entry; entries the journal does not know mean records
//     were cut from its end;
//   - signatures/ holds signed heads that are in the chain, with valid signatures
//     (by a key opts.AllowedSigners lists, when given);
//   - nothing else is there: a file or empty directory no record accounts for is
//     a stray. report/ is derived output, listed and not checked; lock and
//     lock.pid are the apply lock.
//
// Problems are sorted by path. An error means the verification could not run.
func VerifyState(stateDir string, opts VerifyOptions) (*VerifyReport, error) {
	var head *Head
	if opts.Head != "" {
		h, err := ParseHead(opts.Head)
		if err != nil {
			return nil, fmt.Errorf("%w: --head: %v", ErrVerifyUsage, err)
		}
		head = &h
	}
	var signers sshsig.AllowedSigners
	if opts.AllowedSigners != "" {
		b, err := os.ReadFile(opts.AllowedSigners)
		if err != nil {
			return nil, fmt.Errorf("%w: allowed signers: %v", ErrVerifyUsage, err)
		}
		if signers, err = sshsig.ParseAllowedSigners(b); err != nil {
			return nil, fmt.Errorf("%w: allowed signers %s: %v", ErrVerifyUsage, opts.AllowedSigners, err)
		}
	}
	if info, err := os.Stat(stateDir); err != nil || !info.IsDir() {
		return nil, CheckState(stateDir)
	}
	// The walk does not descend into a symlink, so a state directory named through
	// one is resolved first; inside it, a symlink is a problem of its own.
	stateDir, err := filepath.EvalSymlinks(stateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	v := &verifier{dir: stateDir, rep: &VerifyReport{Problems: []Problem{}},
		known: map[string]string{}, open: map[string]string{},
		dirs: map[string]bool{PlanDir: true, AmendmentsDir: true, AttemptsDir: true, SignaturesDir: true},
		sigs: map[string]bool{}}
	data, err := os.ReadFile(filepath.Join(stateDir, JournalFile))
	if errors.Is(err, fs.ErrNotExist) {
		v.problem(JournalFile, "missing: without the journal nothing in the state directory can be verified")
		return v.finish(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	recs, last, hashes, chain := verifyChain(data)
	v.rep.Head, v.rep.Records = Head{Seq: len(hashes), SHA256: last}, len(hashes)
	for _, c := range chain {
		v.problem(JournalFile, "%s", c)
	}
	if len(recs) == 0 {
		v.problem(JournalFile, "holds no records")
	}
	if head != nil {
		v.checkHead(*head, hashes)
	}
	files, err := journalFiles(stateDir, recs)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		v.checkFile(f)
	}
	v.checkPlan(recs)
	v.checkAmendments(recs)
	v.noteAttempts(recs)
	v.checkManifest(files)
	v.checkSignatures(hashes, signers, opts.AllowedSigners != "")
	v.checkLock()
	v.walk()
	return v.finish(), nil
}

func (v *verifier) problem(p, format string, args ...any) {
	v.rep.Problems = append(v.rep.Problems, Problem{Path: p, Problem: fmt.Sprintf(format, args...)})
}

func (v *verifier) note(format string, args ...any) {
	v.rep.Notes = append(v.rep.Notes, fmt.Sprintf(format, args...))
}

func (v *verifier) finish() *VerifyReport {
	sort.SliceStable(v.rep.Problems, func(i, j int) bool { return v.rep.Problems[i].Path < v.rep.Problems[j].Path })
	return v.rep
}

func (v *verifier) abs(rel string) string { return statePath(v.dir, rel) }

// statePath turns a path relative to the state directory (forward slashes) into a
// file name.
func statePath(stateDir, rel string) string { return filepath.Join(stateDir, filepath.FromSlash(rel)) }

// describe names a record for a problem message.
func describe(r *Record) string {
	switch r.Kind {
	case KindStepEnd, KindStepStart:
		return fmt.Sprintf("journal record %d (%s of %s attempt %d)", r.Seq, r.Kind, r.Step, r.Attempt)
	case KindAmendment:
		return fmt.Sprintf("journal record %d (amendment %d)", r.Seq, r.Amendment)
	}
	return fmt.Sprintf("journal record %d (%s)", r.Seq, r.Kind)
}

// checkHead: the record a head names must be in the chain, at its position. A cut
// tail loses it; a recomputed chain changes its hash.
func (v *verifier) checkHead(h Head, hashes []string) {
	seq := h.Seq
	if seq == 0 {
		seq = slices.Index(hashes, h.SHA256) + 1
		if seq == 0 {
			v.problem(JournalFile, "no record hashes to %s (--head): the journal was cut before that head, or rewritten with its chain recomputed", h.SHA256)
			return
		}
	}
	switch {
	case seq > len(hashes):
		v.problem(JournalFile, "holds %d records, but head %s (--head) names record %d: records were cut from the end of the journal", len(hashes), h, seq)
	case hashes[seq-1] != h.SHA256:
		v.problem(JournalFile, "record %d hashes to %s, not %s as head %s (--head) says: the journal was rewritten at or before record %d and its chain recomputed", seq, hashes[seq-1], h.SHA256, h, seq)
	default:
		v.rep.HeadFound = &Head{Seq: seq, SHA256: h.SHA256}
	}
}

// safeRel: a recorded path must stay inside the state directory.
func safeRel(p string) bool {
	return p != "" && !path.IsAbs(p) && path.Clean(p) == p && p != "." && !strings.HasPrefix(p, "../") && !strings.Contains(p, "\\")
}

// checkFile compares one file a record accounts for with what the record says.
func (v *verifier) checkFile(f journalFile) {
	by := describe(f.rec)
	if !safeRel(f.Path) {
		v.problem(JournalFile, "%s names %q, which is not a path inside the state directory", by, f.Path)
		return
	}
	if prev, dup := v.known[f.Path]; dup {
		v.problem(f.Path, "recorded twice: by %s and by %s", prev, by)
	}
	v.known[f.Path] = by
	for d := path.Dir(f.Path); d != "."; d = path.Dir(d) {
		v.dirs[d] = true
	}
	if f.legacy {
		return // hashed from disk just now: nothing to compare it with
	}
	info, err := os.Lstat(v.abs(f.Path))
	switch {
	case err != nil:
		v.problem(f.Path, "missing (recorded by %s)", by)
		return
	case !info.Mode().IsRegular():
		v.problem(f.Path, "not a regular file (recorded by %s)", by)
		return
	}
	sum, err := plans.FileSHA256(v.abs(f.Path))
	if err != nil {
		v.problem(f.Path, "cannot be read: %v", err)
		return
	}
	switch {
	case info.Size() != f.Size:
		v.problem(f.Path, "size %d and sha256 %s, journal recorded size %d and sha256 %s (%s)", info.Size(), sum, f.Size, f.SHA256, by)
	case sum != f.SHA256:
		v.problem(f.Path, "sha256 %s, journal recorded %s (%s)", sum, f.SHA256, by)
	default:
		v.rep.Files++
	}
}

// checkPlan: the journal starts with one plan_frozen record, and the plan files
// hold the hash it froze. These checks also cover journals written before
// plan_frozen recorded file hashes.
func (v *verifier) checkPlan(recs []Record) {
	var frozen []*Record
	for i := range recs {
		if recs[i].Kind == KindPlanFrozen {
			frozen = append(frozen, &recs[i])
		}
	}
	if len(recs) > 0 && recs[0].Kind != KindPlanFrozen {
		v.problem(JournalFile, "record 1 is %s, not plan_frozen: a journal starts by freezing its plan", recs[0].Kind)
	}
	if len(frozen) > 1 {
		v.problem(JournalFile, "holds %d plan_frozen records (the second is record %d): a state directory freezes one plan", len(frozen), frozen[1].Seq)
	}
	if len(frozen) == 0 {
		return
	}
	f := frozen[0]
	legacy := len(f.Artefacts) == 0
	for name, want := range map[string]func([]byte) string{
		"plan.json":   func(b []byte) string { return plans.SHA256Hex(b) },
		"plan.sha256": func(b []byte) string { return strings.TrimSuffix(string(b), "\n") },
	} {
		p := PlanDir + "/" + name
		b, err := os.ReadFile(v.abs(p))
		if err != nil {
			if legacy { // otherwise checkFile already said it is missing
				v.problem(p, "missing (written at freeze, journal record %d)", f.Seq)
			}
			continue
		}
		if got := want(b); got != f.PlanSHA256 || (name == "plan.sha256" && !bytes.HasSuffix(b, []byte("\n"))) {
			v.problem(p, "does not hold the frozen plan hash %s (journal record %d): it gives %q", f.PlanSHA256, f.Seq, shorten(got))
		}
	}
	if legacy {
		v.note("plan/: journal record %d predates plan file hashes, so the plan's source files are checked against manifest.json only (plan.json and plan.sha256 are checked against the frozen plan hash)", f.Seq)
	}
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:79] + "…"
	}
	return s
}

// checkAmendments: amendments are numbered 1, 2, … and each NNNN.json is the
// amendment its record names, chained to the plan before it.
func (v *verifier) checkAmendments(recs []Record) {
	prev, n := "", 0
	for i := range recs {
		r := &recs[i]
		switch r.Kind {
		case KindPlanFrozen:
			if prev == "" {
				prev = r.PlanSHA256
			}
			continue
		case KindAmendment:
		default:
			continue
		}
		n++
		p := amendmentFile(r.Amendment)
		if r.Amendment != n {
			v.problem(JournalFile, "%s should be amendment %d: amendments are numbered in order", describe(r), n)
		}
		if len(r.Artefacts) == 0 {
			v.note("%s predates amendment file hashes: its sources under %s/ are checked against manifest.json only", describe(r), amendmentSources(r.Amendment))
		}
		a, err := readAmendment(v.dir, r.Amendment)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if len(r.Artefacts) == 0 {
				v.problem(p, "missing (recorded by %s)", describe(r))
			}
			continue
		case err != nil:
			v.problem(p, "does not parse: %v", err)
			continue
		}
		canon, err := plans.CanonicalJSON(a.Plan)
		switch {
		case a.Number != r.Amendment:
			v.problem(p, "says it is amendment %d, but %s recorded amendment %d", a.Number, describe(r), r.Amendment)
		case a.PlanSHA256 != r.PlanSHA256:
			v.problem(p, "plan_sha256 %s, but %s recorded %s", a.PlanSHA256, describe(r), r.PlanSHA256)
		case err != nil || plans.SHA256Hex(canon) != a.PlanSHA256:
			v.problem(p, "its plan does not hash to its plan_sha256 %s", a.PlanSHA256)
		case a.PreviousSHA256 != prev:
			v.problem(p, "previous_plan_sha256 %s, but the plan before it is %s", a.PreviousSHA256, prev)
		}
		prev = r.PlanSHA256
	}
}

// noteAttempts remembers every attempt directory, and which attempts never ended.
func (v *verifier) noteAttempts(recs []Record) {
	type key struct {
		step    string
		attempt int
	}
	dirOf := map[key]string{}
	for i := range recs {
		r := &recs[i]
		k := key{r.Step, r.Attempt}
		switch r.Kind {
		case KindStepStart:
			if !safeRel(r.Dir) {
				v.problem(JournalFile, "%s names directory %q, which is not inside the state directory", describe(r), r.Dir)
				continue
			}
			dirOf[k] = r.Dir
			v.open[r.Dir] = describe(r)
			for d := r.Dir; d != "."; d = path.Dir(d) {
				v.dirs[d] = true
			}
		case KindStepEnd:
			if d, ok := dirOf[k]; ok && r.Attempt > 0 {
				delete(v.open, d)
			}
		}
	}
}

// checkManifest compares manifest.json with the index the journal implies and
// names every difference.
func (v *verifier) checkManifest(files []journalFile) {
	got, err := os.ReadFile(v.abs(ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		v.problem(ManifestFile, "missing: rigor writes it at freeze and after every step, as the index of the %d file(s) the journal records", len(files))
		return
	}
	if err != nil {
		v.problem(ManifestFile, "cannot be read: %v", err)
		return
	}
	want, err := renderManifest(manifestOf(files))
	if err != nil {
		v.problem(ManifestFile, "cannot render the expected manifest: %v", err)
		return
	}
	if bytes.Equal(got, want) {
		v.rep.ManifestEntries = len(files)
		return
	}
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		v.problem(ManifestFile, "does not parse as a manifest (%v); the journal records %d file(s)", err, len(files))
		return
	}
	exp := map[string]journalFile{}
	for _, f := range files {
		exp[f.Path] = f
	}
	listed := map[string]bool{}
	var unknown []string
	differs := false
	for _, e := range m.Artefacts {
		if listed[e.Path] {
			v.problem(ManifestFile, "lists %s twice", e.Path)
			differs = true
			continue
		}
		listed[e.Path] = true
		f, ok := exp[e.Path]
		switch {
		case !ok:
			unknown = append(unknown, e.Path)
			v.problem(ManifestFile, "lists %s (%s), which no journal record accounts for", e.Path, entryText(e))
			differs = true
		case e != f.ManifestEntry && f.legacy:
			v.problem(e.Path, "is now %s, manifest.json recorded %s (%s predates file hashes, so manifest.json is the only record of this file)", entryText(f.ManifestEntry), entryText(e), describe(f.rec))
			differs = true
		case e != f.ManifestEntry:
			v.problem(ManifestFile, "entry %s is %s, %s recorded %s", e.Path, entryText(e), describe(f.rec), entryText(f.ManifestEntry))
			differs = true
		}
	}
	for _, f := range files {
		if !listed[f.Path] {
			v.problem(ManifestFile, "omits %s, which %s records", f.Path, describe(f.rec))
			differs = true
		}
	}
	if len(unknown) > 0 {
		v.problem(JournalFile, "manifest.json lists %d file(s) that no record accounts for (%s): records were cut from the end of the journal, or manifest.json was edited", len(unknown), strings.Join(firstN(unknown, 3), ", "))
	}
	if !differs {
		v.problem(ManifestFile, "lists the entries the journal implies, but its bytes are not the ones rigor writes (edited or reformatted)")
	}
}

func entryText(e ManifestEntry) string {
	s := fmt.Sprintf("sha256 %.12s… size %d", e.SHA256, e.Size)
	if e.Step != "" {
		s += fmt.Sprintf(" by %s attempt %d", e.Step, e.Attempt)
	}
	return s
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(append([]string{}, s[:n]...), "…")
	}
	return s
}

var (
	sigMessageName = regexp.MustCompile(`^head-([1-9][0-9]*)\.txt$`)
	sigName        = regexp.MustCompile(`^head-([1-9][0-9]*)\.txt\.sig$`)
	sigMessage     = regexp.MustCompile(`^([1-9][0-9]*):([0-9a-f]{64})\n$`)
)

// checkSignatures checks each signed head under signatures/: it must be in the
// chain, and its signature must verify (by an allowed signer, when required).
func (v *verifier) checkSignatures(hashes []string, signers sshsig.AllowedSigners, required bool) {
	entries, err := os.ReadDir(v.abs(SignaturesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		v.problem(SignaturesDir, "cannot be read: %v", err)
		return
	}
	msgs, sigs := map[int]string{}, map[int]string{}
	for _, e := range entries {
		rel := SignaturesDir + "/" + e.Name()
		if !e.Type().IsRegular() {
			continue // the walk reports it
		}
		if m := sigMessageName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			msgs[n], v.sigs[rel] = rel, true
		} else if m := sigName.FindStringSubmatch(e.Name()); m != nil {
			n, _ := strconv.Atoi(m[1])
			sigs[n], v.sigs[rel] = rel, true
		}
	}
	accepted, lastSigned := 0, 0
	for _, seq := range slices.Sorted(maps.Keys(msgs)) {
		rel := msgs[seq]
		msg, err := os.ReadFile(v.abs(rel))
		if err != nil {
			v.problem(rel, "cannot be read: %v", err)
			continue
		}
		m := sigMessage.FindSubmatch(msg)
		if m == nil || string(m[1]) != strconv.Itoa(seq) {
			v.problem(rel, "does not hold the head of record %d as \"%d:SHA256\\n\"", seq, seq)
			continue
		}
		h := Head{Seq: seq, SHA256: string(m[2])}
		inChain := false
		switch {
		case seq > len(hashes):
			v.problem(JournalFile, "%s signs head %s, but the journal holds %d records: records were cut from its end", rel, h, len(hashes))
		case hashes[seq-1] != h.SHA256:
			v.problem(JournalFile, "record %d hashes to %s, but %s signs %s: the journal was rewritten at or before record %d after it was signed", seq, hashes[seq-1], rel, h, seq)
		default:
			inChain = true
		}
		sigRel, ok := sigs[seq]
		if !ok {
			v.problem(rel, "has no signature (%s is missing)", path.Base(rel)+".sig")
			continue
		}
		armored, err := os.ReadFile(v.abs(sigRel))
		if err != nil {
			v.problem(sigRel, "cannot be read: %v", err)
			continue
		}
		sig, err := sshsig.Verify(armored, msg, SignatureNamespace)
		if err != nil {
			v.problem(sigRel, "%v", err)
			continue
		}
		check := SignatureCheck{Path: sigRel, Head: h, Key: sig.PublicKey.Type() + " " + sig.Fingerprint()}
		if required {
			who := signers.Find(sig.PublicKey, SignatureNamespace)
			if who == nil {
				v.problem(sigRel, "signed by %s, a key the allowed signers file does not list for namespace %s", check.Key, SignatureNamespace)
				continue
			}
			check.Principals = who.Principals
		}
		if !inChain {
			continue // a valid signature over a head the journal no longer holds vouches for nothing
		}
		if required {
			accepted++
		}
		v.rep.Signatures = append(v.rep.Signatures, check)
		lastSigned = max(lastSigned, seq)
	}
	for seq, rel := range sigs {
		if _, ok := msgs[seq]; !ok {
			v.problem(rel, "signs %s, which is missing", path.Base(strings.TrimSuffix(rel, ".sig")))
		}
	}
	if required && accepted == 0 {
		v.problem(SignaturesDir, "no head of this journal signed by an allowed signer: with --allowed-signers at least one signature must verify (sign with `rigor sign`)")
	}
	if len(v.rep.Signatures) > 0 && !required {
		v.note("signatures checked against the keys they carry, not against who may sign: pass --allowed-signers to check the signers")
	}
	if lastSigned > 0 && lastSigned < len(hashes) {
		v.note("records %d to %d come after the last signed head (%d); no signature covers them", lastSigned+1, len(hashes), lastSigned)
	}
}

var pidPattern = regexp.MustCompile(`^[1-9][0-9]*\n$`)

// checkLock: lock is flock's empty file; lock.pid holds the pid of the rigor
// process holding it, and is removed when that process lets go.
func (v *verifier) checkLock() {
	if info, err := os.Lstat(v.abs(lockFile)); err == nil && info.Mode().IsRegular() && info.Size() != 0 {
		v.problem(lockFile, "holds %d bytes; rigor's lock file is always empty", info.Size())
	}
	b, err := os.ReadFile(v.abs(lockPidFile))
	if err != nil {
		return
	}
	if !pidPattern.Match(b) {
		v.problem(lockPidFile, "does not hold a process id")
		return
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if err := syscall.Kill(pid, 0); err == nil || errors.Is(err, syscall.EPERM) {
		v.holder = pid
		v.note("lock.pid: rigor process %d holds this state directory; an attempt it is running is not yet covered by a hash", pid)
	} else {
		v.note("lock.pid: process %d, which wrote it, is not running here (killed, or the state was copied); not evidence", pid)
	}
}

// walk classifies every entry of the state directory.
func (v *verifier) walk() {
	root := map[string]bool{JournalFile: true, ManifestFile: true, lockFile: true, lockPidFile: true}
	_ = filepath.WalkDir(v.dir, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(v.dir, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return err
		}
		if err != nil {
			v.problem(rel, "cannot be read: %v", err)
			return nil
		}
		top, _, nested := strings.Cut(rel, "/")
		if top == ReportDir {
			if !d.IsDir() {
				v.rep.Derived = append(v.rep.Derived, rel)
			}
			return nil
		}
		switch {
		case d.IsDir():
			if !v.dirs[rel] && isEmptyDir(p) {
				v.problem(rel, "stray directory: no journal record accounts for it")
			}
		case !d.Type().IsRegular():
			if v.known[rel] == "" { // checkFile has said it for recorded paths
				v.problem(rel, "not a regular file (%s): a state directory holds only the files rigor wrote", d.Type())
			}
		case !nested && root[rel]:
		case v.known[rel] != "" || v.sigs[rel]:
		case !nested && procgroup.IsRecord(rel):
			v.problem(rel, "records a process group of a step whose attempt directory could not be made (a full disk), left by an apply that was killed; the next apply kills what is left of the group and removes this; not evidence")
		case rel == ManifestFile+".tmp":
			v.problem(rel, "left by an interrupted manifest write (the next apply replaces it); manifest.json is derived, so it is not evidence")
		case !nested:
			v.problem(rel, "stray file: not part of a rigor state directory (its root holds journal.jsonl, manifest.json, plan/, amendments/, attempts/, signatures/, repairs/, report/, lock, lock.pid)")
		default:
			v.classifyUnrecorded(rel)
		}
		return nil
	})
}

// classifyUnrecorded says why a file no record accounts for is there.
func (v *verifier) classifyUnrecorded(rel string) {
	for dir, start := range v.open {
		if strings.HasPrefix(rel, dir+"/") {
			why := "the apply crashed, or the journal's tail with its step_end was cut"
			if v.holder != 0 {
				why = fmt.Sprintf("rigor process %d may still be running it", v.holder)
			}
			v.problem(rel, "written by an attempt that never recorded its artefacts (%s has no step_end: %s); not covered by any hash", start, why)
			return
		}
	}
	v.problem(rel, "stray file: no journal record accounts for it")
}

func isEmptyDir(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	_, err = f.Readdirnames(1)
	return err != nil
}
