package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rigor-bench/rigor/plans"
)

// Amendment is a recorded, prospective change to a frozen plan.
type Amendment struct {
	Number         int             `json:"number"`
	Reason         string          `json:"reason"`
	PreviousSHA256 string          `json:"previous_plan_sha256"`
	PlanSHA256     string          `json:"plan_sha256"`
	Diff           plans.Diff      `json:"diff"`
	Plan           json.RawMessage `json:"plan"`
}

// EffectivePlan returns the canonical JSON of the frozen plan with its recorded
// amendments applied (that is, the latest amendment's plan), and its number.
func EffectivePlan(stateDir string) ([]byte, int, error) {
	recs, _, err := ReadJournal(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return nil, 0, err
	}
	st, err := replay(recs)
	if err != nil {
		return nil, 0, err
	}
	if st.planSHA256 == "" {
		return nil, 0, fmt.Errorf("state directory %s has no frozen plan; run `rigor plan apply` first", stateDir)
	}
	if st.amendments == 0 {
		b, err := os.ReadFile(filepath.Join(stateDir, PlanDir, "plan.json"))
		return b, 0, err
	}
	a, err := readAmendment(stateDir, st.amendments)
	if err != nil {
		return nil, 0, err
	}
	b, err := plans.CanonicalJSON(a.Plan)
	return b, st.amendments, err
}

func amendmentPath(stateDir string, n int) string {
	return filepath.Join(stateDir, filepath.FromSlash(amendmentFile(n)))
}

func readAmendment(stateDir string, n int) (*Amendment, error) {
	b, err := os.ReadFile(amendmentPath(stateDir, n))
	if err != nil {
		return nil, err
	}
	var a Amendment
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("amendment %d: %w", n, err)
	}
	return &a, nil
}

// ErrAmendmentRefused is returned when an amendment touches a step that started.
var ErrAmendmentRefused = fmt.Errorf("amendment refused")

// DiffAgainstState compares a plan with the state's effective plan.
func DiffAgainstState(stateDir string, plan *plans.Plan) (plans.Diff, error) {
	old, _, err := EffectivePlan(stateDir)
	if err != nil {
		return plans.Diff{}, err
	}
	now, err := plan.CanonicalJSON()
	if err != nil {
		return plans.Diff{}, err
	}
	return plans.DiffPlans(old, now)
}

// RecordAmendment appends an amendment making plan the effective plan. It is
// refused if any changed or removed step has started: amendments are prospective.
func RecordAmendment(stateDir string, plan *plans.Plan, reason string, clock Clock) (*Amendment, error) {
	if strings.TrimSpace(reason) == "" {
		return nil, fmt.Errorf("%w: an amendment needs --reason", ErrAmendmentRefused)
	}
	if clock == nil {
		clock = SystemClock{}
	}
	lock, err := AcquireLock(stateDir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	old, n, err := EffectivePlan(stateDir)
	if err != nil {
		return nil, err
	}
	now, err := plan.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	d, err := plans.DiffPlans(old, now)
	if err != nil {
		return nil, err
	}
	if d.Empty() {
		return nil, fmt.Errorf("%w: the file matches the effective plan; there is nothing to amend", ErrAmendmentRefused)
	}
	j, err := OpenJournal(filepath.Join(stateDir, JournalFile), clock)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if st, err := replay(j.Records()); err != nil {
		return nil, err
	} else if st.lifecycle == LifecycleClosed {
		return nil, fmt.Errorf("%w: the campaign is closed, and a closed campaign accepts no amendment", ErrAmendmentRefused)
	}
	started := map[string]bool{}
	for _, r := range j.Records() {
		if r.Kind == KindStepStart {
			started[r.Step] = true
		}
	}
	var refused []string
	for _, addr := range d.Touched() {
		if started[addr] {
			refused = append(refused, addr)
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("%w: these steps already started, so changing them would rewrite evidence: %s", ErrAmendmentRefused, strings.Join(refused, ", "))
	}
	a := &Amendment{Number: n + 1, Reason: reason, PreviousSHA256: plans.SHA256Hex(old), PlanSHA256: plans.SHA256Hex(now), Diff: d, Plan: json.RawMessage(now)}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	// The record carries every file the amendment wrote, so verify can check them.
	art, err := writeEvidence(stateDir, amendmentFile(a.Number), append(b, '\n'))
	if err != nil {
		return nil, fmt.Errorf("write amendment: %w", err)
	}
	arts := []Artefact{art}
	for _, s := range plan.Sources {
		art, err := writeEvidence(stateDir, amendmentSources(a.Number)+"/"+s.Name, s.Bytes)
		if err != nil {
			return nil, fmt.Errorf("write amendment source: %w", err)
		}
		arts = append(arts, art)
	}
	var touched []string
	for _, c := range d.Changes {
		touched = append(touched, c.Addr)
	}
	if _, err := j.Append(Record{Kind: KindAmendment, Amendment: a.Number, PlanSHA256: a.PlanSHA256, Reason: reason, Summary: d.Summary(), Touched: touched, Artefacts: arts}); err != nil {
		return nil, err
	}
	return a, writeManifest(stateDir, j.Records())
}
