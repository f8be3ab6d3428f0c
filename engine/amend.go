package engine

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/rigor-bench/rigor/plans"
)

// Amendment is a recorded change to a frozen plan: prospective, or post-hoc when
// recorded with --post-hoc (engine semantics 10).
type Amendment struct {
	Number         int             `json:"number"`
	Reason         string          `json:"reason"`
	PreviousSHA256 string          `json:"previous_plan_sha256"`
	PlanSHA256     string          `json:"plan_sha256"`
	Diff           plans.Diff      `json:"diff"`
	Plan           json.RawMessage `json:"plan"`
	// PostHoc says the amendment shapes the analysis after measured data exist:
	// every verdict it touches is labelled "post-hoc, not pre-registered" and
	// cannot promote.
	PostHoc bool `json:"post_hoc"`
	// Review classifies each change (absent in amendments older than it).
	Review Review `json:"review,omitempty"`
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
		b, err := readPlanJSON(stateDir)
		return b, 0, err
	}
	a, err := readAmendment(stateDir, st.amendments)
	if err != nil {
		return nil, 0, err
	}
	b, err := plans.CanonicalJSON(a.Plan)
	return b, st.amendments, err
}

// readPlanJSON reads the plan as frozen, before any amendment.
func readPlanJSON(stateDir string) ([]byte, error) {
	return os.ReadFile(filepath.Join(stateDir, PlanDir, "plan.json"))
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

// ErrAmendmentRefused is returned when an amendment is not allowed: it touches a
// step that started, it is post-hoc without --post-hoc (or labelled post-hoc
// while it is prospective), or the campaign is closed.
var ErrAmendmentRefused = fmt.Errorf("amendment refused")

// Proposal is what recording the file as an amendment would do: the semantic diff
// against the effective plan and the class of each change.
type Proposal struct {
	Diff   plans.Diff
	Review Review
	// Closed is set when the campaign is closed and accepts no amendment.
	Closed bool
}

// DiffAgainstState compares a plan with the state's effective plan and classifies
// each change as the journal stands now.
func DiffAgainstState(stateDir string, plan *plans.Plan) (*Proposal, error) {
	if err := CheckState(stateDir); err != nil {
		return nil, err
	}
	if name := frozenCampaignName(stateDir); name != "" && name != plan.Campaign.Name {
		return nil, fmt.Errorf("%w: %s holds campaign %q, and this file is campaign %q: there is nothing to compare", ErrOtherCampaign, stateDir, name, plan.Campaign.Name)
	}
	recs, _, err := ReadJournal(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return nil, err
	}
	old, _, err := EffectivePlan(stateDir)
	if err != nil {
		return nil, err
	}
	return propose(old, plan, recs)
}

func propose(old []byte, plan *plans.Plan, recs []Record) (*Proposal, error) {
	now, err := plan.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	d, err := plans.DiffPlans(old, now)
	if err != nil {
		return nil, err
	}
	rev, err := classify(old, now, d, startedAt(recs))
	if err != nil {
		return nil, err
	}
	st, err := replay(recs)
	if err != nil {
		return nil, err
	}
	return &Proposal{Diff: d, Review: rev, Closed: st.lifecycle == LifecycleClosed}, nil
}

// Render prints, after the diff, what recording it would do: the changes that are
// not plainly prospective, each with why, and the verdict on recording.
func (p *Proposal) Render(w io.Writer) {
	if p.Diff.Empty() {
		return
	}
	fmt.Fprintln(w, "Pre-registration:")
	shaping := 0
	for _, c := range p.Review {
		label := ""
		switch {
		case c.Class == ClassRewrite:
			label = "refused"
		case c.Class == ClassPostHoc:
			label = "post-hoc"
		case c.Shapes != "":
			label = "prospective"
		default:
			continue
		}
		fmt.Fprintf(w, "  %-11s %s\n", label, c.Line())
		shaping++
	}
	if n := len(p.Review) - shaping; n > 0 {
		fmt.Fprintf(w, "  %d other change(s) are prospective: nothing they change has started\n", n)
	}
	switch {
	case p.Closed:
		fmt.Fprintln(w, "The campaign is closed: it accepts no amendment.")
	case len(p.Review.Of(ClassRewrite)) > 0:
		fmt.Fprintln(w, "It cannot be recorded: it would change steps that already ran.")
	case p.Review.PostHoc():
		fmt.Fprintln(w, "It is post-hoc: only --record --post-hoc records it, labelled, and every verdict it touches is labelled \"post-hoc, not pre-registered\" and cannot promote.")
	default:
		fmt.Fprintln(w, "It is prospective: --record records it.")
	}
}

// RecordAmendment appends a prospective amendment making plan the effective plan.
// It is refused if a changed or removed step has started, or if a change shapes
// the analysis after a measured block it affects has started (see
// RecordPostHocAmendment).
func RecordAmendment(stateDir string, plan *plans.Plan, reason string, clock Clock) (*Amendment, error) {
	return recordAmendment(stateDir, plan, reason, false, clock)
}

// RecordPostHocAmendment appends an amendment that shapes the analysis after
// measured data exist, labelled post-hoc. It is refused when no change is in fact
// post-hoc (a prospective amendment is recorded as one), and, like any amendment,
// when a changed or removed step has started.
func RecordPostHocAmendment(stateDir string, plan *plans.Plan, reason string, clock Clock) (*Amendment, error) {
	return recordAmendment(stateDir, plan, reason, true, clock)
}

func recordAmendment(stateDir string, plan *plans.Plan, reason string, postHoc bool, clock Clock) (*Amendment, error) {
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
	j, err := OpenJournal(filepath.Join(stateDir, JournalFile), clock)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	prop, err := propose(old, plan, j.Records())
	if err != nil {
		return nil, err
	}
	d := prop.Diff
	if d.Empty() {
		return nil, fmt.Errorf("%w: the file matches the effective plan; there is nothing to amend", ErrAmendmentRefused)
	}
	if prop.Closed {
		return nil, fmt.Errorf("%w: the campaign is closed, and a closed campaign accepts no amendment", ErrAmendmentRefused)
	}
	if err := refusal(prop.Review, postHoc); err != nil {
		return nil, err
	}
	now, err := plan.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	a := &Amendment{Number: n + 1, Reason: reason, PreviousSHA256: plans.SHA256Hex(old), PlanSHA256: plans.SHA256Hex(now),
		Diff: d, Plan: json.RawMessage(now), PostHoc: postHoc, Review: prop.Review}
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	// The record carries every file the amendment wrote, so verify can check them.
	// Until it is journalled the amendment does not exist: a write that fails (a
	// full disk) removes what the amendment wrote, so recording it again can work.
	var arts []Artefact
	undo := func() {
		for _, a := range arts {
			os.Remove(statePath(stateDir, a.Path))
		}
		os.Remove(statePath(stateDir, amendmentSources(a.Number)))
	}
	art, err := writeEvidence(stateDir, amendmentFile(a.Number), append(b, '\n'))
	if err != nil {
		return nil, fmt.Errorf("write amendment: %w", err)
	}
	arts = append(arts, art)
	for _, s := range plan.Sources {
		art, err := writeEvidence(stateDir, amendmentSources(a.Number)+"/"+s.Name, s.Bytes)
		if err != nil {
			undo()
			return nil, fmt.Errorf("write amendment source: %w", err)
		}
		arts = append(arts, art)
	}
	var touched []string
	for _, c := range d.Changes {
		touched = append(touched, c.Addr)
	}
	if _, err := j.Append(Record{Kind: KindAmendment, Amendment: a.Number, PlanSHA256: a.PlanSHA256, Reason: reason, Summary: d.Summary(),
		Touched: touched, PostHoc: postHoc, Artefacts: arts}); err != nil {
		undo() // the journal was cut back to before the record
		return nil, err
	}
	return a, writeManifest(stateDir, j.Records())
}

// refusal says why an amendment of this review cannot be recorded as asked.
func refusal(rev Review, postHoc bool) error {
	list := func(cs []ChangeReview) string {
		var lines []string
		for _, c := range cs {
			lines = append(lines, "  "+c.Line())
		}
		return strings.Join(lines, "\n")
	}
	if rw := rev.Of(ClassRewrite); len(rw) > 0 {
		return fmt.Errorf("%w: these steps already started, so changing them would rewrite evidence (no label makes that allowed):\n%s", ErrAmendmentRefused, list(rw))
	}
	ph := rev.Of(ClassPostHoc)
	switch {
	case len(ph) > 0 && !postHoc:
		return fmt.Errorf("%w: these changes shape the analysis, and measured blocks they affect have already run, so they would be post-hoc, not pre-registered:\n%s\n"+
			"Record them with --post-hoc to keep them as a labelled post-hoc amendment: every verdict it touches is labelled \"post-hoc, not pre-registered\" and can never promote", ErrAmendmentRefused, list(ph))
	case len(ph) == 0 && postHoc:
		return fmt.Errorf("%w: --post-hoc, but every change is prospective (no measured block any of them affects has started); record it without --post-hoc, so it is not labelled what it is not", ErrAmendmentRefused)
	}
	return nil
}
