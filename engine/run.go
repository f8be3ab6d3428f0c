package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/engine/procgroup"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
)

// loop starts every step that may start, waits for one to finish, and repeats
// until nothing is left.
func (r *run) loop() error {
	for {
		if err := r.schedule(); err != nil {
			return err
		}
		if len(r.running) == 0 {
			if r.allSettled() {
				return nil
			}
			// Nothing runs and nothing can start: the remaining steps wait on each
			// other, which the plan's acyclic graph rules out. Say so rather than hang.
			var left []string
			for _, inst := range r.plan.Instances {
				if !r.settled(inst.Addr) {
					left = append(left, inst.Addr)
				}
			}
			return fmt.Errorf("internal: scheduler stalled with %d unsettled step(s): %s", len(left), strings.Join(left, ", "))
		}
		select {
		case res := <-r.results:
			r.finish(res)
		case <-r.ctxDone():
			r.noteInterrupt()
		case <-r.windows.wake:
			// A block a capture waits for progressed: look again.
		}
	}
}

func (r *run) ctxDone() <-chan struct{} {
	if r.interrupted {
		return nil
	}
	return r.ctx.Done()
}

func (r *run) noteInterrupt() {
	if r.interrupted {
		return
	}
	r.interrupted = true
	sig := interruptSignal(r.ctx)
	if r.stopped == notStopped {
		r.stopped, r.stopCause, r.stopReason, r.stopClass = stopInterrupt, CauseInterrupted, "interrupted by "+sig, ClassInterrupted
	}
	r.journalInterrupt() // watchInterrupt has most often written it already
	if r.interruptErr != nil {
		r.evidenceFailed(r.interruptErr)
	}
	r.event(Event{Kind: "note", Message: "interrupt received (" + sig + "): " + r.interruptEffect()})
}

// interruptEffect says what the interrupt does now: an interrupt that comes
// while only always-steps run (a restore retried on its own, or reached by the
// campaign) cancels nothing.
func (r *run) interruptEffect() string {
	cancelled, restoring := false, false
	for _, inst := range r.running {
		if inst.Meta.Always {
			restoring = true
		} else {
			cancelled = true
		}
	}
	alwaysLeft := false
	for _, inst := range r.plan.Instances {
		if inst.Meta.Always && !r.settled(inst.Addr) {
			if _, running := r.running[inst.Addr]; !running {
				alwaysLeft = true
			}
		}
	}
	switch {
	case cancelled && (alwaysLeft || restoring):
		return "cancelling running steps, then running always-steps (restore)"
	case cancelled:
		return "cancelling running steps; no always-step (restore) is left to run"
	case restoring && alwaysLeft:
		return "no other step starts; the always-steps (restore) running now go on to their end, and those left run next"
	case restoring:
		return "no other step starts; the always-steps (restore) running now go on to their end"
	case alwaysLeft:
		return "no step was running; no other step starts, and the always-steps (restore) run next"
	}
	return "no step was running; no other step starts"
}

// allSettled: every instance has a record of this apply's outcome or is parked.
func (r *run) allSettled() bool {
	for _, inst := range r.plan.Instances {
		if !r.settled(inst.Addr) {
			return false
		}
	}
	return true
}

func (r *run) settled(addr string) bool {
	if r.parked[addr] {
		return true
	}
	_, ok := r.terminal[addr]
	return ok
}

// usable reports whether a settled dependency lets its dependents run.
func (r *run) usable(rec *Record) bool {
	return rec.Status == StatusSucceeded || (rec.Status == StatusFailed && rec.Policy == PolicyRecord)
}

func (r *run) schedule() error {
	if r.ctx.Err() != nil && !r.interrupted {
		r.noteInterrupt()
	}
	for _, inst := range r.plan.Instances {
		if inst.Meta.Always || r.settled(inst.Addr) {
			continue
		}
		if _, running := r.running[inst.Addr]; running {
			continue
		}
		switch {
		case r.stopped != notStopped:
			r.settleUnrun(inst)
		case inst.Arm != "" && r.armStopped[armKey(inst)] != "":
			key := armKey(inst)
			r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusBlocked, Class: r.armClass[key],
				Message: "not started: arm " + key + " stopped: " + r.armStopped[key], BlockedBy: "arm " + key})
		}
	}
	// claimed holds the resources of running steps and of earlier steps still
	// waiting, so a later step never overtakes an earlier one it clashes with.
	var claimed []claim
	for _, inst := range r.running {
		claimed = append(claimed, claimOf(inst))
	}
	for _, inst := range r.plan.Instances {
		if r.settled(inst.Addr) {
			continue
		}
		if _, ok := r.running[inst.Addr]; ok {
			continue
		}
		if inst.Meta.Always && r.nonAlwaysPending() {
			continue // always-steps run last, after everything else has settled
		}
		if !r.ready(inst) {
			// A capture waiting for its block claims nothing: the block must be free
			// to start.
			if !r.settled(inst.Addr) && inst.Meta.During == "" {
				claimed = append(claimed, claimOf(inst))
			}
			continue
		}
		if !inst.Meta.Always && inst.Meta.Condition != nil && !r.conditionHolds(inst) {
			return r.schedule()
		}
		if inst.Meta.During != "" && !r.duringMayStart(inst) {
			if r.settled(inst.Addr) {
				return r.schedule()
			}
			continue
		}
		// A capture runs beside its block, which is already running: the cap on
		// steps at once does not hold it back, or it could never overlap the block.
		if (r.countedRunning() >= r.opts.Parallelism && inst.Meta.During == "") || clashes(inst, claimed) {
			claimed = append(claimed, claimOf(inst))
			continue
		}
		if !inst.Meta.Always && r.plan.Campaign.Outage != nil && r.opensOutage(inst) {
			if long := r.runningPastReserve(); long != "" {
				// It waits: the restore runs only once every step has ended, so a
				// step started before the outage that may run past the reserve
				// would make the outage overrun its budget.
				if !r.waitNoted[inst.Addr] {
					r.waitNoted[inst.Addr] = true
					r.event(Event{Kind: "note", Addr: inst.Addr, Message: "waits to open the outage while " + long + " may still run past the time a new window leaves before its reserve: the restore waits for every step"})
				}
				claimed = append(claimed, claimOf(inst))
				continue
			}
		}
		if !inst.Meta.Always && r.opts.Gate != nil {
			if why := r.opts.Gate(inst, r.settled); why != "" {
				r.stopped, r.stopCause, r.stopClass = stopGate, CauseGate, ClassGate
				r.stopReason = "held before " + inst.Addr + ": " + why
				r.event(Event{Kind: "note", Addr: inst.Addr, Message: r.stopReason})
				return r.schedule()
			}
		}
		if r.start(inst) {
			claimed = append(claimed, claimOf(inst))
		}
		if !inst.Meta.Always && (r.stopped != notStopped || r.settled(inst.Addr)) {
			// A failed start or a deferral changed what may run: look again.
			return r.schedule()
		}
	}
	return nil
}

// countedRunning is how many running steps count against --parallelism: captures
// run beside their blocks and count neither when they start nor while they run.
func (r *run) countedRunning() int {
	n := 0
	for _, inst := range r.running {
		if inst.Meta.During == "" {
			n++
		}
	}
	return n
}

// ready reports whether every dependency of inst has settled in a way it can use,
// and every instance it runs after has settled at all. A dependency that can never
// be used settles inst as blocked (or skipped, or deferred, as the dependency was).
func (r *run) ready(inst *plans.Instance) bool {
	for _, d := range inst.DependsOn {
		rec, ok := r.terminal[d]
		if !ok {
			return false
		}
		if !inst.Meta.Always && !r.usable(rec) {
			r.settleBlocked(inst, d, rec)
			return false
		}
	}
	for _, a := range inst.After {
		if !r.settled(a) {
			return false
		}
	}
	return true
}

// conditionHolds evaluates inst's condition over the outcomes settled so far. False
// settles the step as skipped, with the condition as the reason; a condition that
// cannot be evaluated fails it (class config).
func (r *run) conditionHolds(inst *plans.Instance) bool {
	ctx, diags := r.plan.Context(r.outputs)
	var ok bool
	var err error
	if diags.HasErrors() {
		err = diags
	} else {
		outcomes, arms := r.outcomes()
		ok, err = inst.ConditionHolds(r.plan.ConditionContext(ctx, outcomes, arms))
	}
	switch {
	case err != nil:
		policy := policyFor(ClassConfig, inst.Meta.OnFailureFor(string(ClassConfig)), inst.Arm != "")
		msg := fmt.Sprintf("condition cannot be evaluated: %v", err)
		r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusFailed, Class: ClassConfig, Policy: policy, Message: msg})
		r.stopIfPolicy(inst, ClassConfig, policy, msg)
		return false
	case !ok:
		r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusSkipped,
			Message: "skipped: condition " + conditionText(inst) + " is false"})
		return false
	}
	return true
}

func conditionText(inst *plans.Instance) string {
	if inst.Meta.ConditionText != "" {
		return inst.Meta.ConditionText
	}
	return "at " + inst.Meta.Condition.Range().String()
}

// outcomes are the outcomes of every settled instance and of every matrix arm, as a
// condition reads them.
func (r *run) outcomes() (map[string]plans.Outcome, map[string]map[string]plans.ArmOutcome) {
	outputs := map[string]cty.Value{}
	for _, e := range r.historyView() {
		if e.Outputs != cty.NilVal && !e.Outputs.IsNull() {
			outputs[e.Addr] = e.Outputs
		}
	}
	num := func(v cty.Value, name string) int {
		if v == cty.NilVal || v.IsNull() || !v.Type().IsObjectType() || !v.Type().HasAttribute(name) {
			return 0
		}
		a := v.GetAttr(name)
		if a.IsNull() || !a.IsKnown() || a.Type() != cty.Number {
			return 0
		}
		n, _ := a.AsBigFloat().Int64()
		return int(n)
	}
	out := map[string]plans.Outcome{}
	for addr, rec := range r.terminal {
		o := plans.Outcome{Status: string(rec.Status), Class: string(rec.Class), Disposition: string(rec.Policy)}
		if v, ok := outputs[addr]; ok {
			o.Requests, o.FailedRequests = num(v, "requests"), num(v, "failed")
		}
		out[addr] = o
	}
	arms := map[string]map[string]plans.ArmOutcome{}
	for _, inst := range r.plan.Instances {
		if inst.Arm == "" {
			continue
		}
		if arms[inst.Name] == nil {
			arms[inst.Name] = map[string]plans.ArmOutcome{}
		}
		a, seen := arms[inst.Name][inst.Arm]
		if !seen {
			a = plans.ArmOutcome{Settled: true, Reason: r.armStopped[armKey(inst)]}
			a.Stopped = a.Reason != ""
		}
		o, settled := out[inst.Addr]
		a.Settled = a.Settled && settled
		if settled && o.Status != string(StatusSucceeded) {
			a.FailedBlocks++
		}
		a.FailedRequests += o.FailedRequests
		arms[inst.Name][inst.Arm] = a
	}
	return out, arms
}

func armKey(inst *plans.Instance) string { return inst.Name + "/" + inst.Arm }

func (r *run) nonAlwaysPending() bool {
	for _, inst := range r.plan.Instances {
		if !inst.Meta.Always && !r.settled(inst.Addr) {
			return true
		}
	}
	return false
}

// claim is the resources a running or waiting step holds (plans.Claim).
type claim = plans.Claim

func claimOf(inst *plans.Instance) claim { return inst.Claim() }

// clashes: whether inst may not start beside any claimed step, by plans.Clash (a
// step with no declared uses is exclusive, except a capture running during its
// block).
func clashes(inst *plans.Instance, claimed []claim) bool {
	for _, c := range claimed {
		if clash, _ := plans.Clash(inst.Claim(), c); clash {
			return true
		}
	}
	return false
}

// settleUnrun records why a step never ran after the campaign stopped. A continued
// campaign runs it, unless a dependency can never be used.
func (r *run) settleUnrun(inst *plans.Instance) {
	if r.restoreOnly {
		r.parked[inst.Addr] = true
		return
	}
	r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusBlocked, Class: r.stopClass, Message: "not started: " + r.stopReason, BlockedBy: r.stopReason})
}

// settleBlocked records that a dependency cannot be used. A deferred dependency
// defers its dependents with it: they may run in a later outage window.
func (r *run) settleBlocked(inst *plans.Instance, dep string, rec *Record) {
	status, verb := StatusBlocked, "not started"
	switch rec.Status {
	case StatusDeferred:
		status = StatusDeferred
	case StatusSkipped:
		status, verb = StatusSkipped, "skipped"
	}
	r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: status, Class: rec.Class,
		Message: fmt.Sprintf("%s: dependency %s is %s", verb, dep, rec.Status), BlockedBy: dep})
}

func (r *run) settle(inst *plans.Instance, rec Record) {
	written := r.append(rec)
	r.terminal[inst.Addr] = &written
	r.event(Event{Kind: "step_end", Addr: inst.Addr, Status: rec.Status, Class: rec.Class, Message: rec.Message, Always: inst.Meta.Always})
}

// opensOutage reports whether inst would open an outage window if it started now.
func (r *run) opensOutage(inst *plans.Instance) bool {
	return (inst.Meta.Outage == "begin" || r.reopen && !inst.Meta.Always) && !r.outageView().Open
}

// runningPastReserve names a running step that may still run longer than a new
// outage window leaves before its reserve (its bound from its start), or "".
func (r *run) runningPastReserve() string {
	view := r.outageView()
	view.Elapsed = 0
	now := r.opts.Clock.Now()
	for _, addr := range slices.Sorted(maps.Keys(r.running)) {
		inst := r.running[addr]
		h := r.st.steps[addr]
		if inst.Meta.Always || h == nil || len(h.attempts) == 0 {
			continue
		}
		started := h.attempts[len(h.attempts)-1].start.Time
		if left := started.Add(r.plan.Bound(inst)).Sub(now); left > view.Available() {
			return fmt.Sprintf("%s (it may run %s more)", addr, left.Truncate(time.Second))
		}
	}
	return ""
}

// testHookHashed, set by tests, runs after a step's inputs are hashed.
var testHookHashed func(addr string)

// deferForBudget settles inst as deferred when it would run inside the outage (open,
// or opened by inst) and its bound does not fit before the reserve.
func (r *run) deferForBudget(inst *plans.Instance, timeout time.Duration, opens bool) bool {
	if inst.Meta.Always || r.plan.Campaign.Outage == nil || !r.outageView().Open && !opens {
		return false
	}
	view := r.outageView()
	if opens {
		view.Elapsed = 0
	}
	if timeout <= view.Available() {
		return false
	}
	r.deferred = true
	msg := fmt.Sprintf("deferred: %s needs up to %s but only %s remain before the %s kept for restore", inst.Addr, timeout, max(0, view.Available()).Truncate(time.Second), view.Reserve)
	r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusDeferred, Class: ClassOutageBudget, Message: msg,
		ElapsedS: view.Elapsed.Seconds(), BudgetS: view.Budget.Seconds(), ReserveS: view.Reserve.Seconds()})
	return true
}

// start begins one attempt. It returns false when the step was settled without
// running (deferred for the outage budget, or failed before it could start).
func (r *run) start(inst *plans.Instance) bool {
	step, ok := r.reg[inst.Type]
	if !ok {
		r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusFailed, Class: ClassInternal, Message: fmt.Sprintf("internal: no step type %q registered", inst.Type)})
		return false
	}
	timeout := r.plan.Bound(inst)
	opens := r.opensOutage(inst)
	if r.deferForBudget(inst, timeout, opens) {
		return false
	}
	h := r.st.steps[inst.Addr]
	if h == nil {
		h = &stepHistory{}
		r.st.steps[inst.Addr] = h
	}
	attempt := len(h.attempts) + 1
	dir := attemptDir(inst.Addr, attempt)
	cfg, files, deps, err := r.inputsOf(inst, nil)
	var sum string
	var parts *InputParts
	var digests map[string]string
	var pinProblem *Result
	if err == nil {
		// Hashing the inputs (a corpus, a frozen file of gigabytes) is done off
		// this goroutine, so that an interrupt meanwhile is journaled at once: a
		// third interrupt exits without waiting, and the next apply must know the
		// campaign was being stopped. The step then does not start. An always-step
		// waits for its hashes whatever happens.
		var pinErr error
		hash := func() {
			if sum, parts, err = inputsHash(cfg, files, deps); err == nil {
				digests, pinErr = r.pinnedDigests(inst, cfg)
			}
		}
		if inst.Meta.Always {
			hash()
		} else {
			hashed := make(chan struct{})
			go func() {
				defer close(hashed)
				hash()
			}()
			select {
			case <-hashed:
			case <-r.ctxDone():
				// The hashes are abandoned, never read: the goroutine finishes alone.
				r.noteInterrupt()
				return false
			}
			if testHookHashed != nil {
				testHookHashed(inst.Addr)
			}
			// Hashing took time from an open outage too: the bound must still fit.
			if !opens && r.deferForBudget(inst, timeout, false) {
				return false
			}
		}
		switch {
		case err != nil:
		case pinErr != nil:
			res := Failed(ClassFrozenInputChanged, "pinned inputs cannot be computed: %v", pinErr)
			pinProblem = &res
		default:
			digests, pinProblem = r.comparePinned(digests)
		}
	}
	// No step starts after the interrupt record: an interrupt that came before
	// the check below keeps the step from starting, and watchInterrupt's record
	// of one that comes after waits for this step_start (journalInterrupt takes
	// startMu), so the step is then one the interrupt cancelled.
	r.startMu.Lock()
	if !inst.Meta.Always && r.ctx.Err() != nil {
		r.startMu.Unlock()
		r.noteInterrupt()
		return false
	}
	if opens {
		r.openOutage(inst)
		r.reopen = false
	}
	startRec := r.append(Record{Kind: KindStepStart, Step: inst.Addr, Attempt: attempt, Dir: filepath.ToSlash(dir), InputsSHA256: sum, Inputs: parts, Pinned: digests})
	r.startMu.Unlock()
	a := &attemptRecord{n: attempt, start: &startRec}
	h.attempts = append(h.attempts, a)
	r.event(Event{Kind: "step_start", Addr: inst.Addr, Attempt: attempt, Always: inst.Meta.Always})
	now := r.opts.Clock.Now()
	fail := func(res Result) bool {
		r.running[inst.Addr] = inst
		r.results <- runResult{inst: inst, attempt: attempt, dir: dir, start: now, res: res}
		return true
	}
	// An always-step (restore) runs even when an input cannot be hashed, a pinned
	// input changed or evidence cannot be written: bringing the incumbent back
	// matters more than a clean record. The problem is still its failure, folded
	// in after it ran.
	var alwaysProblem *Result
	if err != nil {
		res := Failed(ClassConfig, "cannot evaluate inputs: %v", err)
		if !inst.Meta.Always || cfg == cty.NilVal {
			return fail(res)
		}
		alwaysProblem = &res
	}
	if pinProblem != nil {
		if !inst.Meta.Always {
			return fail(*pinProblem)
		}
		alwaysProblem = pinProblem
	}
	if r.evidenceErr != nil && !inst.Meta.Always {
		return fail(Failed(ClassEvidenceWrite, "not started: %v", r.evidenceErr))
	}
	absDir := filepath.Join(r.opts.StateDir, dir)
	mkErr := os.MkdirAll(absDir, 0o755)
	if mkErr != nil {
		werr := fmt.Errorf("%w: attempt directory %s: %v", ErrEvidenceWrite, dir, mkErr)
		r.evidenceFailed(werr)
		if !inst.Meta.Always {
			return fail(Failed(ClassEvidenceWrite, "%v", werr))
		}
	}
	var rescued string
	if inst.Meta.Always && r.evidenceErr != nil {
		// The restore runs anyway; its receipt goes where it can be written, and the
		// step_end says where.
		tmp, terr := os.MkdirTemp(r.opts.RescueDir, "rigor-"+safeSegment(r.plan.Campaign.Name)+"-"+safeSegment(inst.Addr)+"-*")
		if terr == nil {
			absDir, rescued = tmp, tmp
			r.event(Event{Kind: "alert", Addr: inst.Addr, Message: fmt.Sprintf("%s runs although the state directory cannot take evidence; its artefacts go to %s", inst.Addr, tmp)})
		}
	}
	parent := r.ctx
	if inst.Meta.Always {
		// Restore must not be cancelled by the interrupt that sent us to it.
		parent = context.WithoutCancel(r.ctx)
	}
	// The commands the step starts record their process groups in its attempt
	// directory, for the next apply to kill should this one be killed: the one in
	// the state directory, which the next apply looks in, even when the step's
	// artefacts go to a rescue directory. A record is an empty file, which a full
	// disk still takes; a new directory may need a block (ext4), so when the
	// attempt directory could not be made, they go to the state's root, which
	// the next apply looks in too.
	groups := r.opts.StateDir
	if mkErr == nil {
		groups = filepath.Join(r.opts.StateDir, dir)
	}
	parent = procgroup.WithDir(parent, groups)
	stepCtx, cancel := context.WithCancel(parent)
	if timeout > 0 {
		stepCtx, cancel = context.WithTimeout(parent, timeout)
	}
	unmarked, _ := cfg.UnmarkDeep()
	pinned := map[string]string{}
	for name := range digests {
		pinned[name] = r.pinned[name]
	}
	sc := &StepContext{
		Addr: inst.Addr, Instance: inst, Plan: r.plan, Config: unmarked, Campaign: r.plan.Campaign.Name, Attempt: attempt,
		Dir: absDir, BaseDir: r.plan.BaseDir, StateDir: r.opts.StateDir, InputsSHA256: sum, Clock: r.opts.Clock,
		Log: r.opts.Log.With().Str("step", inst.Addr).Logger(),
		Progress: func(p Progress) {
			r.windows.progress(inst.Addr, p, r.opts.Clock.Now())
			r.opts.Observe(Event{Kind: "progress", Addr: inst.Addr, Progress: p})
		},
		Outage:    r.outageView,
		History:   r.historyView,
		Pinned:    pinned,
		RerunSafe: r.rerunSafe(inst),
		Secrets:   secretsOf(cfg),
		Rigor:     r.opts.Rigor,
	}
	if r.opts.Redactor != nil {
		for _, s := range sc.Secrets {
			// A string of a few characters (a sensitive map's key) would be
			// redacted from every line of the log, which protects nothing.
			if len(s) >= plans.MinRedacted {
				r.opts.Redactor.Add(s)
			}
		}
	}
	r.running[inst.Addr] = inst
	r.windows.started(inst.Addr, now)
	done := make(chan Result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- Failed(ClassInternal, "step panicked: %v\n%s", p, debug.Stack())
			}
		}()
		done <- step.Run(stepCtx, sc)
	}()
	go func() {
		defer cancel()
		var res Result
		select {
		case res = <-done:
		case <-stepCtx.Done():
			select {
			case res = <-done:
			case <-time.After(r.opts.Grace):
				res = Failed(ClassTimeout, "step did not return within %s after its context ended; abandoned so restore can run", r.opts.Grace)
			}
		}
		if res.Status == "" {
			res.Status = StatusSucceeded
		}
		if res.Status != StatusSucceeded && res.Class == "" {
			switch {
			case errors.Is(stepCtx.Err(), context.DeadlineExceeded):
				res.Class = ClassTimeout
				if res.Message == "" {
					res.Message = fmt.Sprintf("hard bound %s exceeded", timeout)
				}
			case parent.Err() != nil:
				res.Status, res.Class = StatusInterrupted, ClassInterrupted
			default:
				res.Class = ClassInternal
			}
		}
		if res.Status == StatusFailed && res.Class == ClassInterrupted {
			res.Status = StatusInterrupted
		}
		if alwaysProblem != nil && res.Status == StatusSucceeded {
			res = Result{Status: StatusFailed, Class: alwaysProblem.Class, Outputs: res.Outputs,
				Message: alwaysProblem.Message + " (the step itself ran and succeeded)"}
		}
		if rescued != "" {
			res.Message = strings.TrimSpace(res.Message + " (its artefacts were written to " + rescued + ": the state directory could not take them)")
		}
		// A step that quotes a secret in its message (a command's stderr, say) must
		// not put it in the journal, whichever step type it is.
		res.Message = NewRedactor(sc.Secrets...).String(res.Message)
		r.results <- runResult{inst: inst, attempt: attempt, dir: dir, start: now, res: res}
	}()
	return true
}

// openOutage records the beginning of an outage window.
func (r *run) openOutage(inst *plans.Instance) {
	o := r.plan.Campaign.Outage
	r.outageMu.Lock()
	r.window++
	w := r.window
	r.outageMu.Unlock()
	note := ""
	if inst.Meta.Outage != "begin" {
		note = "continuing a held campaign: the restore closed the last window"
	}
	rec := r.append(Record{Kind: KindOutageBegin, Step: inst.Addr, Window: w, BudgetS: o.Budget.Seconds(), ReserveS: o.Reserve.Seconds(), Message: note})
	r.outageMu.Lock()
	r.outageOpen, r.outageBegin = true, rec.Time
	r.outageMu.Unlock()
	msg := "outage opened by " + inst.Addr
	switch {
	case note != "":
		msg = fmt.Sprintf("outage window %d opened as %s starts (%s)", w, inst.Addr, note)
	case w > 1:
		msg = fmt.Sprintf("outage window %d opened by %s", w, inst.Addr)
	}
	r.event(Event{Kind: "outage", Message: msg})
}

// closeOutage records the end of the open outage window at t; an outage that
// outlasted its budget is an overrun, said loudly.
func (r *run) closeOutage(by string, t time.Time, note string) {
	r.outageMu.Lock()
	elapsed := t.Sub(r.outageBegin)
	w := r.window
	r.outageMu.Unlock()
	budget := r.budget()
	over := elapsed > budget
	o := r.plan.Campaign.Outage
	r.append(Record{Kind: KindOutageEnd, Step: by, Window: w, ElapsedS: elapsed.Seconds(), BudgetS: budget.Seconds(), ReserveS: o.Reserve.Seconds(), Overrun: over, Message: note})
	r.outageMu.Lock()
	r.outageOpen = false
	r.lastOutage = &OutageResult{Window: w, Elapsed: elapsed, Budget: budget, Overrun: over}
	r.outageMu.Unlock()
	msg := fmt.Sprintf("outage closed by %s after %s", by, elapsed.Truncate(time.Second))
	if note != "" {
		msg += " (" + note + ")"
	}
	r.event(Event{Kind: "outage", Message: msg, Outage: OutageView{}})
	if over {
		r.event(Event{Kind: "alert", Message: fmt.Sprintf("OUTAGE OVERRUN: the incumbent was out of service for %s, over the %s budget", elapsed.Truncate(time.Second), budget)})
	}
}

func (r *run) finish(rr runResult) {
	inst := rr.inst
	delete(r.running, inst.Addr)
	res := rr.res
	absDir := filepath.Join(r.opts.StateDir, rr.dir)
	now := r.opts.Clock.Now()
	r.windows.ended(inst.Addr, now)
	if inst.Meta.During != "" {
		// The evidence that the capture ran under its block's load, and a capture
		// that did not is incomplete instrumentation, not a quiet success.
		if ok, detail := r.recordOverlap(inst, absDir, rr.start, now); !ok && res.Status == StatusSucceeded {
			res = Result{Status: StatusFailed, Class: ClassInstrumentation, Outputs: res.Outputs,
				Message: "the capture did not overlap " + inst.Meta.During + " as declared: " + detail}
		}
	}
	arts, err := hashArtefacts(r.opts.StateDir, absDir)
	if err != nil {
		res.Message += fmt.Sprintf(" (its artefacts could not all be hashed: %v)", err)
	}
	var outJSON, outType json.RawMessage
	if res.Outputs != cty.NilVal {
		conv, cerr := convert.Convert(res.Outputs, inst.OutputType())
		if cerr != nil {
			res = Failed(ClassInternal, "step returned outputs that do not fit its declared type: %v", cerr)
		} else {
			res.Outputs = conv
			var eerr error
			outJSON, outType, eerr = encodeOutputs(conv)
			if eerr != nil {
				res = Failed(ClassInternal, "step outputs cannot be encoded: %v", eerr)
			}
		}
	}
	if res.Status == StatusSucceeded && res.Outputs == cty.NilVal {
		res.Outputs = cty.NullVal(inst.OutputType())
	}
	rec := Record{
		Kind: KindStepEnd, Step: inst.Addr, Attempt: rr.attempt, Dir: filepath.ToSlash(rr.dir),
		Status: res.Status, Class: res.Class, Message: res.Message, Outputs: outJSON, OutputsType: outType,
		Artefacts: arts, DurationS: r.opts.Clock.Now().Sub(rr.start).Seconds(),
	}
	if res.Status == StatusFailed {
		rec.Policy = policyFor(res.Class, inst.Meta.OnFailureFor(string(res.Class)), inst.Arm != "")
	}
	written := r.append(rec)
	for _, a := range r.st.steps[inst.Addr].attempts {
		if a.n == rr.attempt {
			a.end = &written
		}
	}
	r.addHistory(written, res.Outputs)
	r.terminal[inst.Addr] = &written
	if res.Status == StatusSucceeded || written.Policy == PolicyRecord {
		if res.Outputs != cty.NilVal {
			r.outputs[inst.Addr] = res.Outputs
			r.evalDirty = true
		}
	}
	r.event(Event{Kind: "step_end", Addr: inst.Addr, Attempt: rr.attempt, Status: res.Status, Class: res.Class, Message: res.Message, Duration: time.Duration(rec.DurationS * float64(time.Second)), Always: inst.Meta.Always})
	// The manifest grows by this step's entries; the journal is read for it once per
	// apply, not once per step. It is an index the journal can rebuild, so a failure
	// to write it is only noted.
	if r.manifest == nil {
		fixed, err := planArtefacts(r.opts.StateDir)
		if err == nil {
			r.manifest = append(fixed, stepEntries(r.j.Records())...)
		}
	} else {
		r.manifest = append(r.manifest, endEntries(written)...)
	}
	if r.manifest != nil {
		if err := writeManifestEntries(r.opts.StateDir, r.manifest); err != nil {
			r.evidenceFailed(fmt.Errorf("%w: manifest: %v", ErrEvidenceWrite, err))
		}
	}
	switch {
	case res.Status == StatusSucceeded && inst.Meta.Outage == "end" && r.outageView().Open:
		r.closeOutage(inst.Addr, r.opts.Clock.Now(), "")
	case res.Status == StatusInterrupted && !inst.Meta.Always:
		if r.stopped == notStopped {
			r.stopped, r.stopCause, r.stopClass = stopInterrupt, CauseInterrupted, ClassInterrupted
			r.stopReason = "interrupted during " + inst.Addr
		}
	case res.Status == StatusFailed && !inst.Meta.Always:
		r.stopIfPolicy(inst, res.Class, written.Policy, firstLine(res.Message))
	}
}

// stopIfPolicy applies a failure's policy: an arm stop stops the instance's matrix
// arm; a hold or a campaign stop stops the campaign (the always-steps run next).
func (r *run) stopIfPolicy(inst *plans.Instance, class FailureClass, policy Policy, msg string) {
	reason := fmt.Sprintf("%s failed (%s): %s", inst.Addr, class, msg)
	switch policy {
	case PolicyRecord:
	case PolicyStopArm:
		key := armKey(inst)
		if r.armStopped[key] == "" {
			r.armStopped[key], r.armClass[key] = reason, class
			r.event(Event{Kind: "alert", Addr: inst.Addr, Message: "arm " + key + " stopped: " + reason + "; its remaining blocks will not run, the other arms go on"})
		}
	default:
		if r.stopped == notStopped {
			r.stopped, r.stopCause, r.stopClass, r.stopReason = stopFailure, CauseStopped, class, reason
			if policy == PolicyHold {
				r.stopCause = CauseOnFailureHold
			}
		}
	}
}

func (r *run) writeManifest() error {
	fixed, err := planArtefacts(r.opts.StateDir)
	if err != nil {
		return fmt.Errorf("%w: manifest: %v", ErrEvidenceWrite, err)
	}
	if err := writeManifestEntries(r.opts.StateDir, append(fixed, stepEntries(r.j.Records())...)); err != nil {
		return fmt.Errorf("%w: manifest: %v", ErrEvidenceWrite, err)
	}
	return nil
}

// inputsOf evaluates an instance's configuration with the outputs known so far (or
// with outputs, where not nil) and lists the files and dependency outputs that go
// into its hash.
func (r *run) inputsOf(inst *plans.Instance, outputs plans.Outputs) (cty.Value, []string, map[string]cty.Value, error) {
	var ctx *hcl.EvalContext
	if outputs != nil {
		// Other outputs than the run's: checkResume's, as a step saw them.
		c, diags := r.plan.Context(outputs)
		if diags.HasErrors() {
			return cty.NilVal, nil, nil, diags
		}
		ctx = c
	} else {
		if r.evalDirty || r.evalCtx == nil {
			c, diags := r.plan.Context(r.outputs)
			if diags.HasErrors() {
				return cty.NilVal, nil, nil, diags
			}
			r.evalCtx, r.evalDirty = c, false
		}
		ctx, outputs = r.evalCtx, r.outputs
	}
	cfg, diags := inst.Evaluate(ctx)
	if diags.HasErrors() {
		return cty.NilVal, nil, nil, diags
	}
	if !plans.IsWholeKnown(cfg) {
		return cty.NilVal, nil, nil, fmt.Errorf("configuration still waits for other steps %s", plans.UnknownText(plans.MarksOf(cfg)))
	}
	var files []string
	if fi, ok := r.reg[inst.Type].(FileInputs); ok {
		unmarked, _ := cfg.UnmarkDeep()
		for _, f := range fi.Files(unmarked) {
			if !filepath.IsAbs(f) {
				f = filepath.Join(r.plan.BaseDir, f)
			}
			files = append(files, f)
		}
		sort.Strings(files)
	}
	deps := map[string]cty.Value{}
	for _, d := range inst.DependsOn {
		if v, ok := outputs[d]; ok {
			deps[d] = v
		}
	}
	return cfg, files, deps, nil
}

func convertOutputs(v cty.Value, inst *plans.Instance) (cty.Value, error) {
	out, err := convert.Convert(v, inst.OutputType())
	if err != nil {
		return cty.NilVal, fmt.Errorf("outputs of %s in the journal do not fit its output type: %w", inst.Addr, err)
	}
	return out, nil
}
