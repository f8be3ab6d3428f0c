package engine

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/plans"
)

// Record kinds of the journal.
const (
	KindPlanFrozen  = "plan_frozen"
	KindAmendment   = "amendment"
	KindStepStart   = "step_start"
	KindStepEnd     = "step_end"
	KindOutageBegin = "outage_begin"
	KindOutageEnd   = "outage_end"
	KindInterrupt   = "interrupt"
	KindRecovery    = "recovery"
	KindCampaignEnd = "campaign_end"
	// KindApplyStart opens every apply; a journal whose last apply_start has no
	// campaign_end after it belongs to a running or crashed apply.
	KindApplyStart = "apply_start"
	// KindRefresh records a re-inspection of a target a resumed apply found in place.
	KindRefresh = "refresh"
	// KindCampaignClosed is written by `rigor close`.
	KindCampaignClosed = "campaign_closed"
	// KindJournalRepaired is written by an apply that found the journal's last line
	// torn (a write the machine never finished, as at a power loss): the bytes were
	// moved to repairs/, which the record accounts for.
	KindJournalRepaired = "journal_repaired"
)

// RepairsDir holds the torn journal lines applies moved aside.
const RepairsDir = "repairs"

// GenesisHash is the "previous hash" of the first record.
const GenesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// Artefact is one file of evidence with its size and hash.
type Artefact struct {
	Path   string `json:"path"` // relative to the state directory
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// InputParts are the components of an input hash, kept so a refusal can say which
// input changed.
type InputParts struct {
	ConfigSHA256 string            `json:"config_sha256"`
	Files        map[string]string `json:"files,omitempty"`
	Deps         map[string]string `json:"deps,omitempty"`
}

// Record is one journal line. Fields beyond the envelope are set per kind.
type Record struct {
	Seq  int       `json:"seq"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Prev string    `json:"prev"`

	PlanSHA256   string            `json:"plan_sha256,omitempty"`
	Frozen       map[string]string `json:"frozen,omitempty"`
	Step         string            `json:"step,omitempty"`
	Attempt      int               `json:"attempt,omitempty"`
	Dir          string            `json:"dir,omitempty"`
	InputsSHA256 string            `json:"inputs_sha256,omitempty"`
	Inputs       *InputParts       `json:"inputs,omitempty"`
	Status       Status            `json:"status,omitempty"`
	Class        FailureClass      `json:"class,omitempty"`
	Policy       Policy            `json:"policy,omitempty"`
	Message      string            `json:"message,omitempty"`
	BlockedBy    string            `json:"blocked_by,omitempty"`
	Outputs      json.RawMessage   `json:"outputs,omitempty"`
	OutputsType  json.RawMessage   `json:"outputs_type,omitempty"`
	Artefacts    []Artefact        `json:"artefacts,omitempty"`
	DurationS    float64           `json:"duration_s,omitempty"`
	Reason       string            `json:"reason,omitempty"`
	Amendment    int               `json:"amendment,omitempty"`
	Touched      []string          `json:"touched,omitempty"`
	// PostHoc marks, in an amendment record, an amendment recorded with --post-hoc:
	// it shapes the analysis after measured data exist (engine semantics 10).
	PostHoc bool           `json:"post_hoc,omitempty"`
	Summary string         `json:"summary,omitempty"`
	Counts  map[string]int `json:"counts,omitempty"`
	Pid     int            `json:"pid,omitempty"`
	// Rigor is, in plan_frozen and apply_start, the version and commit of the rigor
	// that wrote the record (Options.Rigor).
	Rigor string `json:"rigor,omitempty"`
	// Pinned are the digests of inputs that must not change, as a step_start saw
	// them (and, in plan_frozen, as the freeze saw them): "file <path>", "corpus …".
	Pinned map[string]string `json:"pinned,omitempty"`
	// Lifecycle is, in apply_start, where the campaign stood when the apply began.
	Lifecycle Lifecycle `json:"lifecycle,omitempty"`
	// Cause says, in campaign_end, why a campaign is held.
	Cause string `json:"cause,omitempty"`
	// RestoreOnly marks a recovery record whose apply runs only the always-steps;
	// Cause (and Signal, for an interrupt) says why. A crash recovery that finds
	// one after the last apply_start does the same (recoverCrash).
	RestoreOnly bool `json:"restore_only,omitempty"`
	// Kept lists, in a recovery record, the always-steps the apply does not run
	// again because their last records stand (a held campaign with nothing left to
	// run): a crash recovery of that apply does not run them either.
	Kept []string `json:"kept,omitempty"`
	// Exhausted marks, in campaign_end, a held campaign with nothing left that a
	// later apply could run (Summary.Exhausted).
	Exhausted bool `json:"exhausted,omitempty"`
	// Settled marks, in campaign_end, a held campaign with nothing left to run and
	// nothing failed: a later apply runs no step and completes it (Summary.Settled).
	Settled bool `json:"settled,omitempty"`
	// Window numbers the outage windows in outage_begin and outage_end records.
	Window int `json:"window,omitempty"`
	// Overrun marks an outage_end whose outage outlasted its budget.
	Overrun  bool    `json:"overrun,omitempty"`
	Signal   string  `json:"signal,omitempty"`
	ElapsedS float64 `json:"elapsed_s,omitempty"`
	BudgetS  float64 `json:"budget_s,omitempty"`
	ReserveS float64 `json:"reserve_s,omitempty"`
}

// Journal is an append-only, fsynced, hash-chained JSON-lines file.
//
// A record that cannot be written (disk full, read-only file system, EIO) is kept
// in memory, in order, and written with the next record that can be: the chain in
// memory is always complete and the file always holds a prefix of it. A failed
// write is cut back to the last whole record, so a torn line never reaches disk.
type Journal struct {
	mu        sync.Mutex
	f         journalSink
	clock     Clock
	records   []Record
	last      string
	size      int64    // bytes of whole records on disk
	unwritten [][]byte // encoded lines not on disk yet, oldest first
	writeErr  error    // the error that left them unwritten
}

// journalSink is what the journal needs of its file (an *os.File; a test puts one
// whose Sync fails in its place).
type journalSink interface {
	Write([]byte) (int, error)
	Sync() error
	Truncate(int64) error
	Close() error
}

// ErrEvidenceWrite wraps a failure to write evidence (the journal, the manifest, an
// attempt directory). It ends measurement, never the restore.
var ErrEvidenceWrite = errors.New("evidence could not be written")

// ErrChainBroken is returned when the journal's hash chain does not verify.
var ErrChainBroken = errors.New("journal hash chain broken")

// OpenJournal opens (creating if needed) a journal and verifies its chain.
func OpenJournal(path string, clock Clock) (*Journal, error) {
	recs, last, err := ReadJournal(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open journal: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open journal: %w", err)
	}
	return &Journal{f: f, clock: clock, records: recs, last: last, size: info.Size()}, nil
}

// ReadJournal reads and verifies a journal, returning its records and the hash of
// the last one. Every discrepancy is an ErrChainBroken naming the line.
func ReadJournal(path string) ([]Record, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, GenesisHash, err
	}
	recs, last, _, problems := verifyChain(data)
	if len(problems) > 0 {
		return recs, last, fmt.Errorf("%w: %s: %s", ErrChainBroken, path, strings.Join(problems, "; "))
	}
	return recs, last, nil
}

// verifyChain checks every line: it parses, its seq follows, its prev is the hash
// of the line before, and the file ends with a newline (a torn last record shows).
// It returns the records that parse, the hash of the last line, the hash of every
// line (hashes[i] is line i+1's), and the problems.
func verifyChain(data []byte) ([]Record, string, []string, []string) {
	var recs []Record
	var hashes, problems []string
	prev := GenesisHash
	if len(data) > 0 && data[len(data)-1] != '\n' {
		problems = append(problems, "the last record is not terminated (truncated journal: a write the machine never finished, as at a power loss; `rigor plan apply` on this state moves it to "+RepairsDir+"/ and recovers as after a crash: a step the crash interrupted is re-run only if it is safe to, otherwise the campaign is restored and held)")
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		raw := sc.Bytes()
		var r Record
		if err := json.Unmarshal(raw, &r); err != nil {
			problems = append(problems, fmt.Sprintf("line %d does not parse: %v", line, err))
			prev = hashLine(raw)
			hashes = append(hashes, prev)
			continue
		}
		if r.Seq != line {
			problems = append(problems, fmt.Sprintf("line %d has seq %d", line, r.Seq))
		}
		if r.Prev != prev {
			problems = append(problems, fmt.Sprintf("line %d: prev %.12s… does not match the hash of line %d (%.12s…)", line, r.Prev, line-1, prev))
		}
		recs = append(recs, r)
		prev = hashLine(raw)
		hashes = append(hashes, prev)
	}
	return recs, prev, hashes, problems
}

func hashLine(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// Records returns a copy of the records read or written so far.
func (j *Journal) Records() []Record {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]Record(nil), j.records...)
}

// Append writes one record in a single write and fsyncs it before returning: the
// record is on disk before the side effect it announces happens. When it cannot be
// written, the record is still appended in memory and the error wraps
// ErrEvidenceWrite: the caller decides what may still happen without it on disk.
func (j *Journal) Append(r Record) (Record, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	r.Seq = len(j.records) + 1
	r.Prev = j.last
	if r.Time.IsZero() {
		r.Time = j.clock.Now().UTC()
	}
	line, err := json.Marshal(r)
	if err != nil {
		return r, fmt.Errorf("encode journal record: %w", err)
	}
	j.records = append(j.records, r)
	j.last = hashLine(line)
	j.unwritten = append(j.unwritten, append(line, '\n'))
	return r, j.flushLocked()
}

// Flush writes the records that earlier appends could not; nil means the file holds
// the whole journal.
func (j *Journal) Flush() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.flushLocked()
}

func (j *Journal) flushLocked() error {
	if len(j.unwritten) == 0 {
		return nil
	}
	buf := bytes.Join(j.unwritten, nil)
	n, err := j.f.Write(buf)
	if err == nil {
		err = j.f.Sync()
	}
	if err != nil {
		// Cut a short or unsynced write back to the last whole record, so the file
		// stays a verifiable prefix of the journal; the lines stay queued.
		if n > 0 || !errors.Is(err, os.ErrClosed) {
			_ = j.f.Truncate(j.size)
		}
		j.writeErr = err
		return fmt.Errorf("%w: journal: %v (%d record(s) kept in memory)", ErrEvidenceWrite, err, len(j.unwritten))
	}
	j.size += int64(len(buf))
	j.unwritten, j.writeErr = nil, nil
	return nil
}

// Unwritten returns the lines not yet on disk, oldest first.
func (j *Journal) Unwritten() [][]byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([][]byte(nil), j.unwritten...)
}

// Head returns the sequence number and hash of the last record (on disk or not).
func (j *Journal) Head() (int, string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.records), j.last
}

// Close closes the journal file.
func (j *Journal) Close() error { return j.f.Close() }

// copyFile copies src to dst, refusing to overwrite.
func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// tornTail is what repairTornTail moved aside.
type tornTail struct {
	art   Artefact
	bytes int
}

// repairTornTail moves a torn last line of the journal (bytes after the last
// newline) to repairs/ and cuts the journal back to its whole records, when those
// verify. A record that never became whole was never acknowledged: a step_start's
// step did not start, and what an end record would have said is what recovery
// settles for any record a crash lost. The bytes are kept, not lost. A torn first
// record is a freeze that never happened: it is simply cut. A repairs/ file that a
// repair wrote before it died, with no journal_repaired record yet, is returned
// again so the apply journals it. Nil when there is nothing to account for (or the
// journal is missing, or broken otherwise: reading it says so).
func repairTornTail(stateDir string) (*tornTail, error) {
	path := filepath.Join(stateDir, JournalFile)
	data, err := os.ReadFile(path)
	if err != nil || len(data) == 0 {
		return nil, nil
	}
	if data[len(data)-1] == '\n' {
		return unjournalledRepair(stateDir, data), nil
	}
	keep := bytes.LastIndexByte(data, '\n') + 1
	recs, _, _, problems := verifyChain(data[:keep])
	if len(problems) > 0 {
		return nil, nil
	}
	var t *tornTail
	if len(recs) > 0 {
		rel := tornPath(len(recs))
		torn := data[keep:]
		if b, err := os.ReadFile(statePath(stateDir, rel)); err != nil || !bytes.Equal(b, torn) {
			// Not there from a repair that died before cutting the journal: write it.
			os.Remove(statePath(stateDir, rel))
			if err := writeFileOnce(statePath(stateDir, rel), torn); err != nil {
				return nil, fmt.Errorf("move the journal's torn last line aside: %w", err)
			}
		}
		t = tornTailOf(rel, torn)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("cut the journal's torn last line: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(keep)); err != nil {
		return nil, fmt.Errorf("cut the journal's torn last line: %w", err)
	}
	if err := f.Sync(); err != nil {
		return nil, fmt.Errorf("cut the journal's torn last line: %w", err)
	}
	return t, nil
}

// tornPath is where the torn line after record n is kept.
func tornPath(n int) string { return fmt.Sprintf("%s/torn-after-record-%d.jsonl", RepairsDir, n) }

// tornTailOf is the artefact of the torn bytes kept at rel.
func tornTailOf(rel string, torn []byte) *tornTail {
	return &tornTail{art: Artefact{Path: rel, Size: int64(len(torn)), SHA256: plans.SHA256Hex(torn)}, bytes: len(torn)}
}

// unjournalledRepair is the repairs/ file of a repair that cut the whole journal
// data back but died before its journal_repaired record; nil when there is none.
// Every apply asks, so the common answer costs a stat: the file would be named
// after the journal's line count, and a record accounting for it names its path.
func unjournalledRepair(stateDir string, data []byte) *tornTail {
	rel := tornPath(bytes.Count(data, []byte("\n")))
	torn, err := os.ReadFile(statePath(stateDir, rel))
	if err != nil || bytes.Contains(data, []byte(`"path":"`+rel+`"`)) {
		return nil
	}
	return tornTailOf(rel, torn)
}
