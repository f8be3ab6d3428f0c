package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// Options configure one apply.
type Options struct {
	StateDir string
	Clock    Clock
	Log      zerolog.Logger
	// Observe receives progress events; nil drops them.
	Observe func(Event)
	// Parallelism caps how many steps run at once (default 4). Steps whose uses
	// clash never overlap whatever the cap.
	Parallelism int
	// Grace is how long past its hard bound a step may take to return before the
	// engine records a timeout and moves on to restore (default 30s).
	Grace time.Duration
	// FlushWait is how long, at the end of an apply, the engine keeps retrying to
	// write journal records that could not be written (a full disk may be freed
	// meanwhile) before it writes them to a rescue file instead (default 10s).
	FlushWait time.Duration
	// RescueDir is where journal records that could not reach the state directory
	// go as a last resort (default os.TempDir()).
	RescueDir string
	// Rigor is the version and commit of the rigor that applies ("devel
	// (3f2a9c1e0b7d)"). The plan_frozen and apply_start records and every step's
	// StepContext carry it, so evidence names the build that produced it even when
	// applies of one campaign ran different builds. Empty leaves it out.
	Rigor string
	// Gate, when set, is asked before each step other than an always-step starts,
	// on the scheduler's goroutine: no journal record is written while it runs, so
	// it may read the state directory. settled says whether a step has an outcome,
	// from this apply or an earlier one. A non-empty answer holds the campaign before
	// next, as a failed gate step would: nothing more starts, the always-steps run,
	// and the apply ends held (cause CauseGate) with the answer in its reason; the
	// next apply asks again. It lets a caller stop at a point the plan does not name
	// (rigor's --hold-unresolvable stops after the pilot).
	Gate func(next *plans.Instance, settled func(addr string) bool) string
	// Redactor, when set, learns each step's secrets before the step starts: the
	// sensitive strings of its evaluated configuration (of plans.MinRedacted bytes
	// or more), those derived from a sensitive variable included (upper(var.key), a
	// URL carrying it), which the variables' own values do not cover: such a string
	// is redacted whole. The CLI's stderr writes through it.
	Redactor *Redactor
}

// Event is one thing worth telling the person at the terminal.
type Event struct {
	Kind     string // apply_start, step_start, step_end, outage, note, alert, progress
	Addr     string
	Attempt  int
	Status   Status
	Class    FailureClass
	Message  string
	Duration time.Duration
	Outage   OutageView
	Progress Progress
	Always   bool
}

// Summary is the outcome of an apply.
type Summary struct {
	// Status is the campaign_end status: completed, held or restore_failed.
	Status string
	// Cause says why a held campaign is held (CauseStopped, CauseDeferred, ...).
	Cause      string
	Reason     string
	PlanSHA256 string
	Counts     map[Status]int
	// Exhausted is true when a held campaign has nothing left that could run: applying
	// again runs nothing, and only `rigor close` ends it.
	Exhausted bool
	// Settled is true when a held campaign has nothing left to run and nothing
	// failed: applying again runs no step (the restore neither) and completes it.
	Settled bool
	// RestoreFailures lists the always-steps that failed or never ran, with why.
	RestoreFailures []string
	// OutageOpen is true when the apply ends with the incumbent out of service.
	OutageOpen bool
	// Outage is the last outage window this apply closed or left open, if any.
	Outage *OutageResult
	// EvidenceError is set when evidence could not be written during the apply.
	EvidenceError string
	// Rescue is the file holding journal records the state directory could not
	// take; Unwritten holds them when even that file could not be written.
	Rescue    string
	Unwritten [][]byte
	// HeadSeq and HeadSHA256 identify the journal's last record (the chain's head).
	HeadSeq    int
	HeadSHA256 string
}

// OutageResult is one outage window as an apply leaves it.
type OutageResult struct {
	Window  int
	Elapsed time.Duration
	Budget  time.Duration
	Open    bool
	Overrun bool
}

// ErrPlanChanged is returned when the file's plan is not the frozen plan plus its
// recorded amendments.
var ErrPlanChanged = errors.New("plan differs from the frozen plan")

// ErrNotFresh refuses to freeze into a directory that holds files no journal record
// accounts for: another tool's, or a campaign's whose journal was emptied.
var ErrNotFresh = errors.New("state directory is not empty")

// ErrInputsChanged is returned when a completed step's inputs no longer match.
var ErrInputsChanged = errors.New("inputs of a completed step changed")

type stopKind int

const (
	notStopped stopKind = iota
	stopFailure
	stopInterrupt
	stopRecovery
	stopGate
)

type runResult struct {
	inst    *plans.Instance
	attempt int
	dir     string
	start   time.Time
	res     Result
}

type run struct {
	plan     *plans.Plan
	reg      Registry
	opts     Options
	j        *Journal
	st       *replayed
	outputs  plans.Outputs
	terminal map[string]*Record
	// parked steps wait for a later apply without a record: what a restore-only
	// apply leaves alone, and always-steps an apply did not need.
	parked  map[string]bool
	running map[string]*plans.Instance
	// waitNoted: the steps that said once why they wait to open the outage.
	waitNoted map[string]bool
	results   chan runResult
	ctx       context.Context

	evalCtx     *hcl.EvalContext
	evalDirty   bool
	stopped     stopKind
	stopCause   string
	stopReason  string
	stopClass   FailureClass
	interrupted bool
	// reopen: this apply continues a held campaign whose outage window the
	// restore closed; the first non-always step to start opens a new one.
	reopen bool
	// interruptOnce writes the interrupt record once, from whichever goroutine
	// sees the interrupt first (watchInterrupt or the scheduler); interruptErr is
	// what that write returned.
	interruptOnce sync.Once
	interruptErr  error
	startMu       sync.Mutex // orders a step_start and the interrupt record (start)
	deferred      bool       // a step was deferred for the outage budget in this apply
	restoreOnly   bool       // the apply retries the restore and holds, nothing else
	pinned        map[string]string
	armStopped    map[string]string       // matrix/arm -> why an operational failure stopped it
	armClass      map[string]FailureClass // matrix/arm -> the class that stopped it
	windows       *windows                // blocks that captures run during
	manifest      []ManifestEntry         // plan files plus every step_end's artefacts so far
	evidenceErr   error

	outageMu    sync.Mutex // guards the outage fields, which running steps read
	outageOpen  bool
	outageBegin time.Time
	window      int
	lastOutage  *OutageResult

	historyMu sync.Mutex // guards history, which running steps read
	history   []Ended
}

// Apply runs a plan against a state directory: it freezes the plan on first use,
// recovers what a crashed apply left, retries a failed restore first, continues a
// held campaign in a new outage window, and always ends with the always-steps.
func Apply(ctx context.Context, plan *plans.Plan, reg Registry, opts Options) (*Summary, error) {
	if opts.Clock == nil {
		opts.Clock = SystemClock{}
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 4
	}
	if opts.Grace <= 0 {
		opts.Grace = 30 * time.Second
	}
	if opts.FlushWait <= 0 {
		opts.FlushWait = 10 * time.Second
	}
	if opts.RescueDir == "" {
		opts.RescueDir = os.TempDir()
	}
	if opts.Observe == nil {
		opts.Observe = func(Event) {}
	}
	lock, err := AcquireLock(opts.StateDir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	torn, err := repairTornTail(opts.StateDir)
	if err != nil {
		return nil, err
	}
	j, err := OpenJournal(filepath.Join(opts.StateDir, JournalFile), opts.Clock)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	if torn != nil {
		msg := fmt.Sprintf("the journal's last line was torn (%d bytes without an end: a write the machine never finished); moved to %s", torn.bytes, torn.art.Path)
		if _, err := j.Append(Record{Kind: KindJournalRepaired, Message: msg, Artefacts: []Artefact{torn.art}}); err != nil {
			return nil, err
		}
		opts.Observe(Event{Kind: "alert", Message: msg})
	}
	planJSON, err := plan.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	planHash := plans.SHA256Hex(planJSON)
	if len(j.Records()) == 0 {
		if err := freeze(opts.StateDir, plan, reg, planJSON, planHash, opts.Rigor, j); err != nil {
			return nil, err
		}
	}
	st, err := replay(j.Records())
	if err != nil {
		return nil, err
	}
	if name := frozenCampaignName(opts.StateDir); name != "" && name != plan.Campaign.Name {
		return nil, fmt.Errorf("%w: %s holds campaign %q, and this file is campaign %q; each campaign keeps its own state directory, so pass another --state", ErrOtherCampaign, opts.StateDir, name, plan.Campaign.Name)
	}
	if st.lifecycle == LifecycleClosed {
		ce := &ClosedError{At: st.ended.Time, How: "completed", Reason: st.ended.Message}
		if st.ended.Kind == KindCampaignClosed {
			ce.How, ce.Reason = "closed by rigor close", st.ended.Reason
		}
		return nil, ce
	}
	if st.planSHA256 != planHash {
		return nil, fmt.Errorf("%w: the state directory holds plan %.12s… (frozen, %d amendment(s)) but the file evaluates to %.12s…; run `rigor plan diff` to see what changed and `--record --reason` to amend before any changed step starts", ErrPlanChanged, st.planSHA256, st.amendments, planHash)
	}
	r := &run{
		plan: plan, reg: reg, opts: opts, j: j, st: st, ctx: ctx,
		outputs: plans.Outputs{}, terminal: map[string]*Record{}, parked: map[string]bool{},
		running: map[string]*plans.Instance{}, waitNoted: map[string]bool{}, results: make(chan runResult, len(plan.Instances)+1), evalDirty: true,
		outageOpen: st.outageOpen, outageBegin: st.outageBegin, window: st.window, pinned: st.pinned,
		armStopped: map[string]string{}, armClass: map[string]FailureClass{}, windows: newWindows(plan),
	}
	if err := r.loadHistory(); err != nil {
		return nil, err
	}
	// Checked before the apply is journalled: an apply refused here changes nothing,
	// so the campaign's lifecycle stays what it was.
	if err := r.checkResume(); err != nil {
		return nil, err
	}
	prev := st.lifecycle
	r.append(Record{Kind: KindApplyStart, Pid: os.Getpid(), Rigor: opts.Rigor, Lifecycle: prev})
	stopWatching := r.watchInterrupt()
	// From here an interrupt is journaled: the command's messages depend on it.
	r.event(Event{Kind: "apply_start"})
	r.recover(prev)
	err = r.loop()
	stopWatching()
	if err != nil {
		return nil, err
	}
	return r.end(), nil
}

// watchInterrupt journals an interrupt the moment it comes, whatever the scheduler
// is doing (hashing a large input, keeping a finished step's evidence): a third
// interrupt exits at once, without waiting for the scheduler, and the next apply
// must find that the campaign was being stopped (recoverCrash). The returned
// function stops watching, waiting for a write in progress.
func (r *run) watchInterrupt() (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-r.ctx.Done():
			r.journalInterrupt()
		case <-done:
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}

// journalInterrupt appends the interrupt record, once.
func (r *run) journalInterrupt() {
	r.startMu.Lock()
	defer r.startMu.Unlock()
	r.interruptOnce.Do(func() {
		_, r.interruptErr = r.j.Append(Record{Kind: KindInterrupt, Signal: interruptSignal(r.ctx), Message: "no step starts after this but always-steps; running steps other than always-steps are cancelled"})
	})
}

// interruptSignal names what cancelled ctx: the signal, as the command's cause says.
func interruptSignal(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil {
		return cause.Error()
	}
	return "interrupt"
}

// frozenCampaignName reads the campaign's name from the frozen plan ("" if none).
func frozenCampaignName(stateDir string) string {
	b, _, err := EffectivePlan(stateDir)
	if err != nil {
		return ""
	}
	var p struct {
		Campaign struct {
			Name string `json:"name"`
		} `json:"campaign"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	return p.Campaign.Name
}

// end writes campaign_end, the manifest and whatever the journal still owes the
// disk, and says how the apply ended.
func (r *run) end() *Summary {
	sum := &Summary{PlanSHA256: r.st.planSHA256, Counts: map[Status]int{}}
	for _, inst := range r.plan.Instances {
		if rec := r.terminal[inst.Addr]; rec != nil {
			sum.Counts[rec.Status]++
		}
		if !inst.Meta.Always || r.parked[inst.Addr] {
			continue
		}
		if rec := r.terminal[inst.Addr]; rec == nil || rec.Status != StatusSucceeded {
			why := "did not run"
			if rec != nil {
				why = fmt.Sprintf("%s (%s): %s", rec.Status, rec.Class, firstLine(rec.Message))
			}
			sum.RestoreFailures = append(sum.RestoreFailures, inst.Addr+" "+why)
		}
	}
	notRerun, down := r.notRerun()
	switch {
	case len(sum.RestoreFailures) > 0:
		sum.Status, sum.Reason = EndRestoreFailed, "restore did not succeed: "+sum.RestoreFailures[0]
		if r.stopReason != "" {
			sum.Reason += "; the campaign had stopped before: " + r.stopReason
		}
	case r.stopped != notStopped:
		sum.Status, sum.Cause, sum.Reason = EndHeld, r.stopCause, r.stopReason
		switch {
		case r.deferred || r.pendingOutside(down) > 0:
		case notRerun != "" || r.stopFailure() != "":
			// What is left waits on a step no apply runs again, or on a failure:
			// applying again runs nothing, and only a person closes the campaign.
			sum.Exhausted = true
			if notRerun != "" {
				sum.Reason += "; nothing left can run: " + notRerun
			} else {
				sum.Reason += "; nothing left can run: what is left waits on the failed step"
			}
		default:
			// Every step ran (the stop came during or after the restore, or the
			// restore was retried): applying again runs nothing and completes.
			sum.Settled = true
			sum.Reason += "; every step has run: applying again completes the campaign without running a step"
		}
	case r.deferred:
		sum.Status, sum.Cause = EndHeld, CauseDeferred
		sum.Reason = "some steps did not fit in the outage budget and were deferred; apply again to run them in a new outage window"
	case r.pending() > 0:
		sum.Status, sum.Cause = EndHeld, CauseStopped
		sum.Reason = fmt.Sprintf("%d step(s) are still to run; apply again to continue", r.pending())
	case r.stopFailure() != "":
		// Nothing is left that could run, but the campaign was stopped by a failure:
		// it is not a completed campaign, and only a person closes it.
		sum.Status, sum.Cause, sum.Exhausted = EndHeld, CauseStopped, true
		sum.Reason = "nothing left can run, but " + r.stopFailure() + "; the campaign stays held for review: `rigor close --reason` closes it"
	case notRerun != "":
		// An interrupted step that may not run again never finished: what waits on it
		// never ran, so the campaign did not complete either.
		sum.Status, sum.Cause, sum.Exhausted = EndHeld, CauseStopped, true
		sum.Reason = "nothing left can run, but " + notRerun + "; the campaign stays held for review: `rigor close --reason` closes it"
	default:
		sum.Status = EndCompleted
		if len(r.armStopped) > 0 {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(r.armStopped)) {
				parts = append(parts, "arm "+k+" stopped: "+r.armStopped[k])
			}
			sum.Reason = "every arm that could run ran; " + strings.Join(parts, "; ")
		}
	}
	counts := map[string]int{}
	for k, v := range sum.Counts {
		counts[string(k)] = v
	}
	r.append(Record{Kind: KindCampaignEnd, Status: Status(sum.Status), Cause: sum.Cause, Message: sum.Reason, Counts: counts, Exhausted: sum.Exhausted, Settled: sum.Settled})
	r.outageMu.Lock()
	sum.OutageOpen = r.outageOpen
	if r.outageOpen {
		el := r.opts.Clock.Now().Sub(r.outageBegin)
		sum.Outage = &OutageResult{Window: r.window, Elapsed: el, Budget: r.budget(), Open: true, Overrun: el > r.budget()}
	} else if r.lastOutage != nil {
		o := *r.lastOutage
		sum.Outage = &o
	}
	r.outageMu.Unlock()
	r.flushEvidence(sum)
	if r.evidenceErr != nil {
		sum.EvidenceError = r.evidenceErr.Error()
	}
	sum.HeadSeq, sum.HeadSHA256 = r.j.Head()
	return sum
}

// stopFailure names the first step whose failure stopped the campaign (policy
// stop_campaign or hold), "" when none did.
func (r *run) stopFailure() string {
	for _, inst := range r.plan.Instances {
		rec := r.terminal[inst.Addr]
		if inst.Meta.Always || rec == nil || rec.Status != StatusFailed {
			continue
		}
		if rec.Policy == PolicyStopCampaign || rec.Policy == PolicyHold {
			return fmt.Sprintf("%s failed (%s)", inst.Addr, rec.Class)
		}
	}
	return ""
}

// notRerun names the interrupted steps that no apply runs again (they do not declare
// rerun_safe) and the blocked steps that wait on them, directly or through others,
// or "". down holds them all.
func (r *run) notRerun() (msg string, down map[string]bool) {
	var stuck, waiting []string
	down = map[string]bool{}
	for _, inst := range r.plan.Instances { // run order: a dependency comes first
		rec := r.terminal[inst.Addr]
		if inst.Meta.Always || rec == nil {
			continue
		}
		if rec.Status == StatusInterrupted && !r.mayRerun(inst, rec) {
			stuck = append(stuck, inst.Addr)
			down[inst.Addr] = true
			continue
		}
		if rec.Status == StatusBlocked && slices.ContainsFunc(inst.DependsOn, func(d string) bool { return down[d] }) {
			down[inst.Addr] = true
			waiting = append(waiting, inst.Addr)
		}
	}
	if len(stuck) == 0 {
		return "", down
	}
	msg = strings.Join(stuck, ", ") + " was interrupted and does not declare rerun_safe, so no apply runs it again"
	if len(stuck) > 1 {
		msg = strings.Join(stuck, ", ") + " were interrupted and do not declare rerun_safe, so no apply runs them again"
	}
	if len(waiting) > 0 {
		msg += "; waiting on it, never run: " + strings.Join(waiting, ", ")
	}
	return msg, down
}

// pending counts the non-always steps left for a later apply.
func (r *run) pending() int { return r.pendingOutside(nil) }

// pendingOutside counts the non-always steps left for a later apply, leaving out
// those in skip.
func (r *run) pendingOutside(skip map[string]bool) int {
	n := 0
	for _, inst := range r.plan.Instances {
		if inst.Meta.Always || skip[inst.Addr] {
			continue
		}
		rec := r.terminal[inst.Addr]
		// An interrupted step that may run again is still to run: a later apply
		// runs it (continueHeld), so the campaign has not completed.
		if rec == nil || rec.Status == StatusDeferred || (rec.Status == StatusBlocked && r.heldBack(inst, rec)) || r.mayRerun(inst, rec) {
			n++
		}
	}
	return n
}

// heldBack reports whether a blocked step was held back by a stop, so a continued
// campaign runs it, rather than blocked by a dependency that can never be used.
func (r *run) heldBack(inst *plans.Instance, rec *Record) bool {
	if rec.Status == StatusDeferred {
		return true
	}
	if rec.Status != StatusBlocked || strings.HasPrefix(rec.BlockedBy, "arm ") {
		// A stopped arm stays stopped (seed 001: operational failures stop the arm).
		return false
	}
	for _, d := range inst.DependsOn {
		if dep := r.terminal[d]; dep != nil && !r.usable(dep) && !r.heldBack(r.instance(d), dep) && !r.mayRerun(r.instance(d), dep) {
			return false
		}
	}
	return true
}

func (r *run) instance(addr string) *plans.Instance {
	inst, _ := r.plan.Instance(addr)
	return inst
}

// mayRerun reports whether an interrupted attempt may be run again.
func (r *run) mayRerun(inst *plans.Instance, rec *Record) bool {
	return inst != nil && rec.Status == StatusInterrupted && r.rerunSafe(inst)
}

// rerunSafe: the plan declared rerun_safe, or the step type is safe to run again
// by nature (it computes or reads, and sends nothing that is measured).
func (r *run) rerunSafe(inst *plans.Instance) bool {
	if inst.Meta.RerunSafe {
		return true
	}
	rs, ok := r.reg[inst.Type].(RerunSafe)
	return ok && rs.RerunSafe()
}

// flushEvidence writes what the journal still owes the disk and the manifest,
// retrying for a while (space may be freed), then rescues what it cannot write.
func (r *run) flushEvidence(sum *Summary) {
	deadline := time.Now().Add(r.opts.FlushWait)
	for len(r.j.Unwritten()) > 0 {
		if r.j.Flush() == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if lines := r.j.Unwritten(); len(lines) > 0 {
		name := fmt.Sprintf("rigor-rescue-%s-%d.jsonl", safeSegment(r.plan.Campaign.Name), time.Now().UnixNano())
		path := filepath.Join(r.opts.RescueDir, name)
		var buf []byte
		for _, l := range lines {
			buf = append(buf, l...)
		}
		if err := os.WriteFile(path, buf, 0o644); err == nil {
			sum.Rescue = path
		} else {
			sum.Unwritten = lines
		}
		return
	}
	if err := r.writeManifest(); err != nil {
		r.evidenceFailed(err)
	}
}

// freeze writes the plan into the state directory and opens the journal with it,
// pinning the campaign's frozen files and every pinned input already known. The
// plan_frozen record carries the size and sha256 of every file written under plan/,
// so `rigor verify` can check each byte against the journal.
func freeze(stateDir string, plan *plans.Plan, reg Registry, planJSON []byte, planHash, rigor string, j *Journal) error {
	// The journal is empty, so files under plan/ are what a freeze killed before its
	// plan_frozen record left: no record accounts for them, nothing was frozen, and
	// they would keep every later apply from freezing. Anything else is not rigor's
	// to remove or overwrite.
	if err := checkUnfrozen(stateDir); err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(stateDir, PlanDir)); err != nil {
		return fmt.Errorf("freeze plan: remove what an interrupted freeze left: %w", err)
	}
	var arts []Artefact
	write := func(name string, b []byte) error {
		a, err := writeEvidence(stateDir, PlanDir+"/"+name, b)
		if err != nil {
			return fmt.Errorf("freeze plan: %w", err)
		}
		arts = append(arts, a)
		return nil
	}
	if len(plan.Sources) == 1 {
		if err := write("frozen.hcl", plan.Sources[0].Bytes); err != nil {
			return err
		}
	} else {
		for _, s := range plan.Sources {
			if err := write("src/"+s.Name, s.Bytes); err != nil {
				return err
			}
		}
	}
	if err := write("plan.json", planJSON); err != nil {
		return err
	}
	if err := write("plan.sha256", []byte(planHash+"\n")); err != nil {
		return err
	}
	frozen := map[string]string{}
	for _, f := range plan.Campaign.Frozen {
		sum, err := plans.FileSHA256(filepath.Join(plan.BaseDir, f))
		if err != nil {
			return fmt.Errorf("frozen input %s: %w", f, err)
		}
		frozen[f] = sum
	}
	pinned := map[string]string{}
	for _, inst := range plan.Instances {
		pi, ok := reg[inst.Type].(PinnedInputs)
		if !ok {
			continue
		}
		cfg := inst.Config()
		if !plans.IsWholeKnown(cfg) {
			continue
		}
		cfg, _ = cfg.UnmarkDeep()
		d, err := pi.PinnedInputs(cfg, plan.BaseDir)
		if err != nil {
			return fmt.Errorf("pinned inputs of %s: %w", inst.Addr, err)
		}
		for k, v := range d {
			if _, ok := pinned[k]; !ok {
				pinned[k] = v
			}
		}
	}
	if _, err := j.Append(Record{Kind: KindPlanFrozen, PlanSHA256: planHash, Frozen: frozen, Pinned: pinned, Pid: os.Getpid(), Rigor: rigor, Artefacts: arts}); err != nil {
		return err
	}
	return writeManifest(stateDir, j.Records())
}

// succeededBefore is the latest attempt of addr that succeeded, with outputs, before
// journal record seq; nil when none did.
func (r *run) succeededBefore(addr string, seq int) *attemptRecord {
	h := r.st.steps[addr]
	if h == nil {
		return nil
	}
	for i := len(h.attempts) - 1; i >= 0; i-- {
		a := h.attempts[i]
		if a.end != nil && a.end.Seq < seq && a.end.Status == StatusSucceeded && a.outputs != cty.NilVal {
			return a
		}
	}
	return nil
}

// mustInstance is the instance at addr, which the plan is known to hold.
func mustInstance(p *plans.Plan, addr string) *plans.Instance {
	inst, _ := p.Instance(addr)
	return inst
}

// loadHistory restores what earlier applies settled: the latest record of every
// step and the outputs of succeeded attempts.
func (r *run) loadHistory() error {
	for _, rec := range r.j.Records() {
		if rec.Kind != KindStepEnd || rec.Attempt == 0 {
			continue
		}
		out, err := decodeOutputs(rec.Outputs, rec.OutputsType)
		if err != nil {
			return fmt.Errorf("journal record %d: outputs of %s: %w", rec.Seq, rec.Step, err)
		}
		r.addHistory(rec, out)
	}
	for addr, h := range r.st.steps {
		inst, ok := r.plan.Instance(addr)
		if !ok || h.final == nil {
			continue
		}
		r.terminal[addr] = h.final
		for _, a := range h.attempts {
			if a.end == h.final && a.outputs != cty.NilVal && (h.final.Status == StatusSucceeded || h.final.Policy == PolicyRecord) {
				v, err := convertOutputs(a.outputs, inst)
				if err != nil {
					return err
				}
				r.outputs[addr] = v
			}
		}
		// The latest succeeded attempt's outputs stay usable even if a later
		// attempt (a re-run after an interrupt) has not ended well.
		if _, ok := r.outputs[addr]; !ok {
			for i := len(h.attempts) - 1; i >= 0; i-- {
				a := h.attempts[i]
				if a.end != nil && a.end.Status == StatusSucceeded && a.outputs != cty.NilVal {
					v, err := convertOutputs(a.outputs, inst)
					if err != nil {
						return err
					}
					r.outputs[addr] = v
					break
				}
			}
		}
	}
	return nil
}

// checkResume refuses to go on if a settled step's inputs would now hash
// differently: the plan is frozen, so its evidence must stay what it was.
func (r *run) checkResume() error {
	for _, inst := range r.plan.Instances {
		rec := r.terminal[inst.Addr]
		if rec == nil || rec.Attempt == 0 {
			continue
		}
		var start *Record
		for _, a := range r.st.steps[inst.Addr].attempts {
			if a.n == rec.Attempt {
				start = a.start
			}
		}
		if start == nil || start.InputsSHA256 == "" {
			continue
		}
		// Dependencies are taken as the step saw them, in its configuration too: the
		// outputs of their attempts that had succeeded when the step started. A
		// deploy that ran again after a restore undid it has other outputs now (a
		// new container), and the steps that ran before against the old one are
		// evidence of that one.
		var seen plans.Outputs
		for _, d := range inst.DependsOn {
			a := r.succeededBefore(d, start.Seq)
			if a == nil || a.end == r.st.steps[d].final {
				continue // the final attempt, whose outputs the run holds (loadHistory)
			}
			conv, err := convertOutputs(a.outputs, mustInstance(r.plan, d))
			if err != nil {
				return fmt.Errorf("%w: %s: %v", ErrInputsChanged, inst.Addr, err)
			}
			if cur, ok := r.outputs[d]; ok && cur.RawEquals(conv) {
				continue
			}
			if seen == nil {
				seen = maps.Clone(r.outputs)
			}
			seen[d] = conv
		}
		cfg, files, deps, err := r.inputsOf(inst, seen)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInputsChanged, inst.Addr, err)
		}
		if start.Inputs != nil {
			// A dependency an amendment added after the step ran was never one of
			// its inputs: its outputs, once it runs, do not change what was recorded.
			for d := range deps {
				if _, was := start.Inputs.Deps[d]; !was {
					delete(deps, d)
				}
			}
		}
		sum, parts, err := inputsHash(cfg, files, deps)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInputsChanged, inst.Addr, err)
		}
		if sum != start.InputsSHA256 {
			return fmt.Errorf("%w: step %s completed with inputs %.12s…, but now %s (inputs %.12s…); the plan is frozen, so its evidence cannot be reused or redone — use a new state directory", ErrInputsChanged, inst.Addr, start.InputsSHA256, describeInputChange(start.Inputs, parts), sum)
		}
	}
	return nil
}

func (r *run) event(e Event) {
	if e.Outage == (OutageView{}) {
		e.Outage = r.outageView()
	}
	r.opts.Observe(e)
}

func (r *run) budget() time.Duration {
	if o := r.plan.Campaign.Outage; o != nil {
		return o.Budget
	}
	return 0
}

// outageView may be called from running steps (StepContext.Outage) while the
// scheduler opens or closes the outage, hence the lock.
func (r *run) outageView() OutageView {
	r.outageMu.Lock()
	defer r.outageMu.Unlock()
	o := r.plan.Campaign.Outage
	v := OutageView{Open: r.outageOpen, Window: r.window}
	if o != nil {
		v.Budget, v.Reserve = o.Budget, plans.StartReserve(o.Reserve, r.plan.AlwaysBound())
	}
	if r.outageOpen {
		v.Elapsed = r.opts.Clock.Now().Sub(r.outageBegin)
	}
	return v
}

// append writes a journal record. A record that cannot reach the disk is kept in
// memory (the journal retries it with the next record) and ends measurement; it
// never keeps the always-steps from running.
func (r *run) append(rec Record) Record {
	w, err := r.j.Append(rec)
	if err != nil {
		r.evidenceFailed(err)
	}
	return w
}

// evidenceFailed stops measurement after the first evidence write error.
func (r *run) evidenceFailed(err error) {
	if r.evidenceErr != nil {
		return
	}
	r.evidenceErr = err
	// Journal and manifest errors already say that evidence could not be written.
	reason := err.Error()
	if !errors.Is(err, ErrEvidenceWrite) {
		reason = ErrEvidenceWrite.Error() + ": " + reason
	}
	r.event(Event{Kind: "alert", Message: reason + "; measurement ends here, restore still runs, and unwritten records are kept in memory"})
	if r.stopped == notStopped {
		r.stopped, r.stopCause, r.stopClass = stopFailure, CauseEvidence, ClassEvidenceWrite
		r.stopReason = reason
	}
}

func (r *run) addHistory(rec Record, outputs cty.Value) {
	typ := ""
	if inst, ok := r.plan.Instance(rec.Step); ok {
		typ = inst.Type
	}
	r.historyMu.Lock()
	r.history = append(r.history, Ended{Addr: rec.Step, Type: typ, Attempt: rec.Attempt, Status: rec.Status, Class: rec.Class, Outputs: outputs, Seq: rec.Seq})
	r.historyMu.Unlock()
}

func (r *run) historyView() []Ended {
	r.historyMu.Lock()
	defer r.historyMu.Unlock()
	return append([]Ended(nil), r.history...)
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
