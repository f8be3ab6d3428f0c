package engine

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// Layout of a state directory.
const (
	JournalFile   = "journal.jsonl"
	ManifestFile  = "manifest.json"
	PlanDir       = "plan"
	AmendmentsDir = "amendments"
	AttemptsDir   = "attempts"
	lockFile      = "lock"
)

// attemptRecord is what the journal says about one attempt of a step.
type attemptRecord struct {
	n       int
	start   *Record
	end     *Record
	outputs cty.Value
}

// stepHistory is everything the journal says about one step.
type stepHistory struct {
	attempts []*attemptRecord
	final    *Record // its latest step_end
}

// replayed is the state reconstructed from the journal.
type replayed struct {
	planSHA256  string
	frozen      map[string]string
	pinned      map[string]string // name -> the digest that first pinned it
	amendments  int
	steps       map[string]*stepHistory
	outageOpen  bool
	outageBegin time.Time
	window      int // the number of the last outage window opened
	lifecycle   Lifecycle
	ended       *Record          // the campaign_end or campaign_closed that set the lifecycle
	lastApply   int              // seq of the last apply_start (0 in journals older than it)
	openRuns    []*attemptRecord // started, never ended: the previous apply died
}

func replay(recs []Record) (*replayed, error) {
	st := &replayed{steps: map[string]*stepHistory{}, pinned: map[string]string{}, lifecycle: LifecycleNew}
	hist := func(addr string) *stepHistory {
		h := st.steps[addr]
		if h == nil {
			h = &stepHistory{}
			st.steps[addr] = h
		}
		return h
	}
	pin := func(m map[string]string) {
		for k, v := range m {
			if _, ok := st.pinned[k]; !ok {
				st.pinned[k] = v
			}
		}
	}
	for i := range recs {
		r := &recs[i]
		if st.lifecycle == LifecycleNew && r.Kind != KindPlanFrozen && r.Kind != KindAmendment {
			// Journals older than apply_start records begin with a step record.
			st.lifecycle = LifecycleRunning
		}
		switch r.Kind {
		case KindPlanFrozen:
			st.planSHA256, st.frozen = r.PlanSHA256, r.Frozen
			for path, sum := range r.Frozen {
				pin(map[string]string{FilePin(path): sum})
			}
			pin(r.Pinned)
		case KindAmendment:
			st.planSHA256 = r.PlanSHA256
			st.amendments = r.Amendment
		case KindApplyStart:
			st.lastApply = r.Seq
			st.lifecycle = LifecycleRunning
		case KindStepStart:
			h := hist(r.Step)
			h.attempts = append(h.attempts, &attemptRecord{n: r.Attempt, start: r})
			pin(r.Pinned)
		case KindStepEnd:
			h := hist(r.Step)
			if r.Attempt > 0 {
				var a *attemptRecord
				for _, x := range h.attempts {
					if x.n == r.Attempt {
						a = x
					}
				}
				if a == nil {
					return nil, fmt.Errorf("journal record %d ends attempt %d of %s, which never started", r.Seq, r.Attempt, r.Step)
				}
				a.end = r
				out, err := decodeOutputs(r.Outputs, r.OutputsType)
				if err != nil {
					return nil, fmt.Errorf("journal record %d: outputs of %s: %w", r.Seq, r.Step, err)
				}
				a.outputs = out
			}
			h.final = r
		case KindOutageBegin:
			st.outageOpen, st.outageBegin = true, r.Time
			st.window = max(st.window+1, r.Window)
		case KindOutageEnd:
			st.outageOpen = false
		case KindCampaignEnd:
			st.ended, st.lifecycle = r, lifecycleOf(r.Status)
		case KindCampaignClosed:
			st.ended, st.lifecycle = r, LifecycleClosed
		}
	}
	for _, h := range st.steps {
		for _, a := range h.attempts {
			if a.end == nil {
				st.openRuns = append(st.openRuns, a)
			}
		}
	}
	return st, nil
}

// FilePin names the pinned digest of a file: "file <path as the plan wrote it>".
func FilePin(path string) string { return "file " + path }

var unsafeSegment = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// attemptDir maps a step address to a directory: block.primary["arm/c4/r2"] becomes
// attempts/block.primary/arm/c4/r2/<n>, each segment reduced to safe characters.
func attemptDir(addr string, n int) string {
	base, key, keyed := strings.Cut(addr, "[")
	parts := []string{AttemptsDir, safeSegment(base)}
	if keyed {
		key = strings.TrimSuffix(key, "]")
		key = strings.Trim(key, `"`)
		for _, seg := range strings.Split(key, "/") {
			parts = append(parts, safeSegment(seg))
		}
	}
	parts = append(parts, fmt.Sprint(n))
	return filepath.Join(parts...)
}

func safeSegment(s string) string {
	s = unsafeSegment.ReplaceAllString(s, "_")
	if s == "" || s == "." || s == ".." {
		return "_" + s
	}
	return s
}

// writeFileOnce writes a file that must not exist yet, and fsyncs it. A write that
// fails (a full disk) removes what it created: a partial file would be a stray to
// verify and would make the retry's create fail.
func writeFileOnce(path string, data []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(path)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// writeEvidence writes a new file of evidence at rel (relative to the state
// directory, forward slashes) and returns the artefact a journal record keeps.
func writeEvidence(stateDir, rel string, data []byte) (Artefact, error) {
	if err := writeFileOnce(statePath(stateDir, rel), data); err != nil {
		return Artefact{}, err
	}
	return Artefact{Path: rel, Size: int64(len(data)), SHA256: plans.SHA256Hex(data)}, nil
}

// writeFileAtomic replaces a derived index file (manifest.json) atomically.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	// No fsync: the manifest is derived from the fsynced journal and is rebuilt
	// after every step, so a crash can cost it nothing the journal does not hold.
	return os.Rename(tmp, path)
}

// checkUnfrozen checks that a state directory whose journal has no record holds only
// what an apply writes before its first record: the journal, the lock, and the files
// a freeze writes under plan/. It names the first entry that is something else.
func checkUnfrozen(stateDir string) error {
	frozen := map[string]bool{"frozen.hcl": true, "plan.json": true, "plan.sha256": true}
	var stray string
	err := filepath.WalkDir(stateDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(stateDir, path)
		rel = filepath.ToSlash(rel)
		var ours bool
		switch {
		case rel == "." || rel == JournalFile || rel == lockFile || rel == lockFile+".pid" || rel == PlanDir || rel == PlanDir+"/src":
			ours = true
		case strings.HasPrefix(rel, PlanDir+"/src/"):
			ours = !d.IsDir() && !strings.Contains(strings.TrimPrefix(rel, PlanDir+"/src/"), "/")
		case strings.HasPrefix(rel, PlanDir+"/"):
			ours = !d.IsDir() && frozen[strings.TrimPrefix(rel, PlanDir+"/")]
		}
		if !ours {
			stray = rel
			return fs.SkipAll
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("freeze plan: read %s: %w", stateDir, err)
	}
	if stray != "" {
		return fmt.Errorf("%w: %s holds %s, but its journal has no record, so rigor did not write it; refusing to freeze a campaign over it: pass a new or empty --state", ErrNotFresh, stateDir, stray)
	}
	return nil
}
