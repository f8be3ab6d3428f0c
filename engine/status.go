package engine

import (
	"path/filepath"
	"sort"
	"time"
)

// StepStatus is the latest word on one step.
type StepStatus struct {
	Addr     string       `json:"addr"`
	Status   Status       `json:"status"`
	Class    FailureClass `json:"class,omitempty"`
	Attempts int          `json:"attempts"`
	Message  string       `json:"message,omitempty"`
	seq      int
}

// StateStatus summarises a state directory from its journal.
type StateStatus struct {
	PlanSHA256 string `json:"plan_sha256"`
	Amendments int    `json:"amendments"`
	Records    int    `json:"records"`
	Head       Head   `json:"head"` // the last record: write it down to check later with verify --head
	// Lifecycle is where the campaign stands: running (or crashed), held,
	// restore_failed or closed; Cause says why a held campaign is held.
	Lifecycle   Lifecycle  `json:"lifecycle"`
	Cause       string     `json:"cause,omitempty"`
	OutageOpen  bool       `json:"outage_open"`
	OutageSince *time.Time `json:"outage_since,omitempty"`
	// OutageWindow numbers the last outage window opened.
	OutageWindow int    `json:"outage_window,omitempty"`
	Ended        string `json:"ended,omitempty"`
	EndReason    string `json:"end_reason,omitempty"`
	// Exhausted: the campaign is held with nothing left that applying again could run.
	Exhausted bool `json:"exhausted,omitempty"`
	// Settled: the campaign is held with every step run; applying again completes it.
	Settled bool     `json:"settled,omitempty"`
	Running []string `json:"running_or_crashed,omitempty"`
	// ApplyPID is the rigor process holding the state now (lifecycle running, lock
	// held; 0 while it has not yet written lock.pid).
	ApplyPID int `json:"apply_pid,omitempty"`
	// Crashed: the lifecycle is running but no rigor process holds the state: the
	// last apply died before it ended (the next apply recovers it).
	Crashed bool         `json:"crashed,omitempty"`
	Steps   []StepStatus `json:"steps"`
}

// ReadStatus reads a state directory's journal into a status summary.
func ReadStatus(stateDir string) (*StateStatus, error) {
	if err := CheckState(stateDir); err != nil {
		return nil, err
	}
	// The lock is probed before and after the journal is read: an apply that ended
	// or began in between is not taken for a crash.
	heldBefore, _ := LockHolder(stateDir)
	recs, last, err := ReadJournal(filepath.Join(stateDir, JournalFile))
	if err != nil {
		return nil, err
	}
	st, err := replay(recs)
	if err != nil {
		return nil, err
	}
	out := &StateStatus{PlanSHA256: st.planSHA256, Amendments: st.amendments, Records: len(recs), Head: Head{Seq: len(recs), SHA256: last}, OutageOpen: st.outageOpen,
		Lifecycle: st.lifecycle, OutageWindow: st.window}
	if st.outageOpen {
		t := st.outageBegin
		out.OutageSince = &t
	}
	if st.ended != nil && st.lifecycle != LifecycleRunning {
		out.Ended, out.EndReason, out.Cause, out.Exhausted = string(st.ended.Status), st.ended.Message, st.ended.Cause, st.ended.Exhausted
		out.Settled = st.ended.Settled
		if st.ended.Kind == KindCampaignClosed {
			out.Ended, out.EndReason = "closed", st.ended.Reason
		}
	}
	for _, a := range st.openRuns {
		out.Running = append(out.Running, a.start.Step)
	}
	if st.lifecycle == LifecycleRunning {
		heldAfter, pid := LockHolder(stateDir)
		out.Crashed = !heldBefore && !heldAfter
		if heldAfter {
			out.ApplyPID = pid
		}
	}
	for addr, h := range st.steps {
		s := StepStatus{Addr: addr, Attempts: len(h.attempts)}
		last := h.final
		for _, a := range h.attempts {
			if a.end != nil && (last == nil || a.end.Seq > last.Seq) {
				last = a.end
			}
			if a.end == nil {
				s.Status = "running"
				s.seq = a.start.Seq
			}
		}
		if last != nil && s.Status == "" {
			s.Status, s.Class, s.Message, s.seq = last.Status, last.Class, last.Message, last.Seq
		}
		out.Steps = append(out.Steps, s)
	}
	sort.Slice(out.Steps, func(i, j int) bool { return out.Steps[i].seq < out.Steps[j].seq })
	return out, nil
}
