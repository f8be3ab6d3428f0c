package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Lifecycle is where a campaign stands between applies (DESIGN.md, engine semantics 9).
type Lifecycle string

// Lifecycles. Only closed is final.
const (
	// LifecycleNew: the state directory holds no journal yet.
	LifecycleNew Lifecycle = "new"
	// LifecycleRunning: an apply started and wrote no campaign_end; it is running, or
	// it died (the next apply recovers it).
	LifecycleRunning Lifecycle = "running"
	// LifecycleHeld: stopped, interrupted or deferred with the incumbent restored. It
	// may be amended prospectively and continued by another apply in a new outage
	// window, or closed with `rigor close`.
	LifecycleHeld Lifecycle = "held"
	// LifecycleRestoreFailed: an always-step (restore) failed; the outage stays open
	// and every later apply retries the restore before anything else.
	LifecycleRestoreFailed Lifecycle = "restore_failed"
	// LifecycleClosed: completed, or closed by `rigor close`. Nothing runs again.
	LifecycleClosed Lifecycle = "closed"
)

// Campaign end statuses written in campaign_end records.
const (
	EndCompleted     = "completed"
	EndHeld          = "held"
	EndRestoreFailed = "restore_failed"
)

// Causes of a hold, in campaign_end records and summaries.
const (
	CauseStopped       = "stopped"        // a stop-class failure
	CauseDeferred      = "deferred"       // a step did not fit in the outage budget
	CauseInterrupted   = "interrupted"    // SIGINT/SIGTERM
	CauseRecovered     = "recovered"      // a crashed apply left something that must be reviewed
	CauseEvidence      = "evidence_write" // evidence could not be written (disk full, EIO)
	CauseRestoreRetry  = "restore_retried"
	CauseOnFailureHold = "on_failure_hold"
	CauseGate          = "gate" // Options.Gate held the campaign before a step
)

// lifecycleOf maps a campaign_end status (including those older journals wrote) to
// the lifecycle it leaves the campaign in.
func lifecycleOf(endStatus Status) Lifecycle {
	switch endStatus {
	case EndCompleted:
		return LifecycleClosed
	case EndRestoreFailed:
		return LifecycleRestoreFailed
	default: // held, and the older stopped, deferred, interrupted, recovered
		return LifecycleHeld
	}
}

// ErrClosed is returned by Apply on a closed campaign.
var ErrClosed = errors.New("campaign is closed")

// ClosedError says when and why a campaign was closed.
type ClosedError struct {
	At     time.Time
	How    string // "completed" or "closed by rigor close"
	Reason string
}

func (e *ClosedError) Error() string {
	msg := fmt.Sprintf("the campaign was %s at %s", e.How, e.At.Format(time.RFC3339))
	if e.Reason != "" {
		msg += " (" + e.Reason + ")"
	}
	return msg + "; nothing runs again on a closed campaign: a new campaign needs a new state directory"
}

func (e *ClosedError) Unwrap() error { return ErrClosed }

// ErrCloseRefused is returned when a campaign cannot be closed in its state.
var ErrCloseRefused = errors.New("close refused")

// Close closes a held campaign for good, with the reason recorded in the journal.
// A campaign whose outage is open, or whose last apply is running or died, cannot
// be closed: the incumbent must be restored first.
func Close(stateDir, reason string, clock Clock) (*Record, error) {
	if reason == "" {
		return nil, fmt.Errorf("%w: a close needs --reason, which is recorded in the journal", ErrCloseRefused)
	}
	if clock == nil {
		clock = SystemClock{}
	}
	if err := CheckState(stateDir); err != nil {
		return nil, err
	}
	lock, err := AcquireLock(stateDir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	j, err := OpenJournal(filepath.Join(stateDir, JournalFile), clock)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	st, err := replay(j.Records())
	if err != nil {
		return nil, err
	}
	switch st.lifecycle {
	case LifecycleNew:
		return nil, fmt.Errorf("%w: %s holds no campaign", ErrCloseRefused, stateDir)
	case LifecycleClosed:
		return nil, fmt.Errorf("%w: the campaign is already closed", ErrCloseRefused)
	case LifecycleRestoreFailed:
		open := " (no outage is open)"
		if st.outageOpen {
			open = " and the outage is open"
		}
		return nil, fmt.Errorf("%w: the last restore failed%s; `rigor plan apply` retries the restore first", ErrCloseRefused, open)
	case LifecycleRunning:
		return nil, fmt.Errorf("%w: an apply is running or died without closing (the journal has no campaign_end after its last apply); run `rigor plan apply` to recover it first", ErrCloseRefused)
	}
	if st.outageOpen {
		return nil, fmt.Errorf("%w: the outage is open; run `rigor plan apply` to restore first", ErrCloseRefused)
	}
	rec, err := j.Append(Record{Kind: KindCampaignClosed, Reason: reason, Pid: os.Getpid()})
	if err != nil {
		return nil, err
	}
	return &rec, writeManifest(stateDir, j.Records())
}

// ErrNoState says a directory holds no campaign state.
var ErrNoState = errors.New("no campaign state")

// CheckState says, in a sentence, why a directory is not a campaign's state
// directory; nil when it holds a journal.
func CheckState(stateDir string) error {
	st, err := os.Stat(stateDir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w in %s: the directory does not exist (`rigor plan apply CAMPAIGN --state %s` creates it)", ErrNoState, stateDir, stateDir)
	case err != nil:
		return fmt.Errorf("%w in %s: %v", ErrNoState, stateDir, err)
	case !st.IsDir():
		return fmt.Errorf("%w in %s: it is a file, not a state directory", ErrNoState, stateDir)
	}
	if _, err := os.Stat(filepath.Join(stateDir, JournalFile)); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("%w in %s: the directory holds no %s, so no campaign was ever applied there", ErrNoState, stateDir, JournalFile)
	}
	return nil
}

// CheckCampaignState is CheckState, and also says when the directory holds another
// campaign than the one named.
func CheckCampaignState(stateDir, campaign string) error {
	if err := CheckState(stateDir); err != nil {
		return err
	}
	if name := frozenCampaignName(stateDir); name != "" && name != campaign {
		return fmt.Errorf("%w: %s holds campaign %q, and this file is campaign %q", ErrOtherCampaign, stateDir, name, campaign)
	}
	return nil
}

// ErrOtherCampaign is returned when a state directory belongs to another campaign.
var ErrOtherCampaign = errors.New("state directory belongs to another campaign")
