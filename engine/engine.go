package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
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
}

// Event is one thing worth telling the person at the terminal.
type Event struct {
	Kind     string // step_start, step_end, outage, note, progress
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
	Status     string // completed, stopped, interrupted, deferred, closed
	Reason     string
	PlanSHA256 string
	Counts     map[Status]int
}

// ErrPlanChanged is returned when the file's plan is not the frozen plan plus its
// recorded amendments.
var ErrPlanChanged = errors.New("plan differs from the frozen plan")

// ErrInputsChanged is returned when a completed step's inputs no longer match.
var ErrInputsChanged = errors.New("inputs of a completed step changed")

type stopKind int

const (
	notStopped stopKind = iota
	stopFailure
	stopDeferred
	stopInterrupt
	stopRecovery
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
	running  map[string]*plans.Instance
	results  chan runResult
	ctx      context.Context

	evalCtx      *hcl.EvalContext
	evalDirty    bool
	stopped      stopKind
	stopReason   string
	stopClass    FailureClass
	interrupted  bool
	outageOpen   bool
	outageBegin  time.Time
	frozenHashes map[string]string
	manifest     []ManifestEntry // plan files plus every step_end's artefacts so far
	outageMu     sync.Mutex      // guards outageOpen and outageBegin
	historyMu    sync.Mutex      // guards history, which running steps read
	history      []Ended
}

// Apply runs a plan against a state directory: it freezes the plan on first use,
// resumes otherwise, recovers from a crashed apply, and always ends with the
// always-steps.
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
	if opts.Observe == nil {
		opts.Observe = func(Event) {}
	}
	lock, err := AcquireLock(opts.StateDir)
	if err != nil {
		return nil, err
	}
	defer lock.Release()
	j, err := OpenJournal(filepath.Join(opts.StateDir, JournalFile), opts.Clock)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	planJSON, err := plan.CanonicalJSON()
	if err != nil {
		return nil, err
	}
	planHash := plans.SHA256Hex(planJSON)
	if len(j.Records()) == 0 {
		if err := freeze(opts.StateDir, plan, planJSON, planHash, j); err != nil {
			return nil, err
		}
	}
	st, err := replay(j.Records())
	if err != nil {
		return nil, err
	}
	if st.planSHA256 != planHash {
		return nil, fmt.Errorf("%w: the state directory holds plan %.12s… (frozen, %d amendment(s)) but the file evaluates to %.12s…; run `rigor plan diff` to see what changed and `--record --reason` to amend before any changed step starts", ErrPlanChanged, st.planSHA256, st.amendments, planHash)
	}
	r := &run{
		plan: plan, reg: reg, opts: opts, j: j, st: st, ctx: ctx,
		outputs: plans.Outputs{}, terminal: map[string]*Record{}, running: map[string]*plans.Instance{},
		results: make(chan runResult, len(plan.Instances)+1), evalDirty: true,
		outageOpen: st.outageOpen, outageBegin: st.outageBegin, frozenHashes: st.frozen,
	}
	if st.ended != nil {
		return r.summary("closed", "the campaign was closed at "+st.ended.Time.Format(time.RFC3339)+"; a new campaign needs a new state directory"), nil
	}
	if err := r.loadHistory(); err != nil {
		return nil, err
	}
	if err := r.recover(); err != nil {
		return nil, err
	}
	if err := r.checkResume(); err != nil {
		return nil, err
	}
	if err := r.loop(); err != nil {
		return nil, err
	}
	status := "completed"
	switch r.stopped {
	case stopFailure:
		status = "stopped"
	case stopDeferred:
		status = "deferred"
	case stopInterrupt:
		status = "interrupted"
	case stopRecovery:
		status = "recovered"
	}
	sum := r.summary(status, r.stopReason)
	counts := map[string]int{}
	for k, v := range sum.Counts {
		counts[string(k)] = v
	}
	if _, err := j.Append(Record{Kind: KindCampaignEnd, Status: Status(status), Message: r.stopReason, Counts: counts}); err != nil {
		return nil, err
	}
	return sum, nil
}

func (r *run) summary(status, reason string) *Summary {
	s := &Summary{Status: status, Reason: reason, PlanSHA256: r.st.planSHA256, Counts: map[Status]int{}}
	for _, rec := range r.terminal {
		s.Counts[rec.Status]++
	}
	return s
}

// freeze writes the plan into the state directory and opens the journal with it.
func freeze(stateDir string, plan *plans.Plan, planJSON []byte, planHash string, j *Journal) error {
	dir := filepath.Join(stateDir, PlanDir)
	if len(plan.Sources) == 1 {
		if err := writeFileOnce(filepath.Join(dir, "frozen.hcl"), plan.Sources[0].Bytes); err != nil {
			return fmt.Errorf("freeze plan: %w", err)
		}
	} else {
		for _, s := range plan.Sources {
			if err := writeFileOnce(filepath.Join(dir, "src", s.Name), s.Bytes); err != nil {
				return fmt.Errorf("freeze plan: %w", err)
			}
		}
	}
	if err := writeFileOnce(filepath.Join(dir, "plan.json"), planJSON); err != nil {
		return fmt.Errorf("freeze plan: %w", err)
	}
	if err := writeFileOnce(filepath.Join(dir, "plan.sha256"), []byte(planHash+"\n")); err != nil {
		return fmt.Errorf("freeze plan: %w", err)
	}
	frozen := map[string]string{}
	for _, f := range plan.Campaign.Frozen {
		sum, err := plans.FileSHA256(filepath.Join(plan.BaseDir, f))
		if err != nil {
			return fmt.Errorf("frozen input %s: %w", f, err)
		}
		frozen[f] = sum
	}
	_, err := j.Append(Record{Kind: KindPlanFrozen, PlanSHA256: planHash, Frozen: frozen, Pid: os.Getpid()})
	return err
}

// loadHistory marks steps settled by earlier applies and restores their outputs.
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
		if _, ok := r.plan.Instance(addr); !ok {
			continue
		}
		if h.final != nil {
			r.terminal[addr] = h.final
			for _, a := range h.attempts {
				if a.end == h.final && a.outputs != cty.NilVal {
					inst, _ := r.plan.Instance(addr)
					v, err := convert.Convert(a.outputs, inst.OutputType())
					if err != nil {
						return fmt.Errorf("outputs of %s in the journal do not fit its output type: %w", addr, err)
					}
					r.outputs[addr] = v
				}
			}
		}
	}
	return nil
}

// recover settles attempts a crashed apply left open. With the outage open, only
// the always-steps run: the incumbent comes back before anything else happens.
func (r *run) recover() error {
	if len(r.st.openRuns) == 0 && !r.st.outageOpen {
		return nil
	}
	sort.Slice(r.st.openRuns, func(i, j int) bool { return r.st.openRuns[i].start.Seq < r.st.openRuns[j].start.Seq })
	for _, a := range r.st.openRuns {
		// Whatever the dead attempt wrote is hashed now, as it was found, so the
		// evidence of a crash is covered like any other.
		arts, err := hashArtefacts(r.opts.StateDir, filepath.Join(r.opts.StateDir, filepath.FromSlash(a.start.Dir)))
		if err != nil {
			return err
		}
		if _, err := r.j.Append(Record{
			Kind: KindStepEnd, Step: a.start.Step, Attempt: a.n, Dir: a.start.Dir, Artefacts: arts,
			Status: StatusInterrupted, Class: ClassCrash,
			Message: "the previous apply stopped during this attempt (crash or kill); its evidence is kept as it was",
		}); err != nil {
			return err
		}
	}
	msg := fmt.Sprintf("previous apply ended without closing: %d attempt(s) left open", len(r.st.openRuns))
	if r.st.outageOpen {
		msg += "; the outage is still open, so only always-steps (restore) run now"
		r.stopped, r.stopReason, r.stopClass = stopRecovery, "recovery: the outage was left open by an apply that did not finish", ClassCrash
	}
	_, err := r.j.Append(Record{Kind: KindRecovery, Message: msg, Pid: os.Getpid()})
	r.event(Event{Kind: "note", Message: msg})
	return err
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
		cfg, files, deps, err := r.inputsOf(inst)
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrInputsChanged, inst.Addr, err)
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

// inputsOf evaluates an instance's configuration with the outputs known so far and
// lists the files and dependency outputs that go into its hash.
func (r *run) inputsOf(inst *plans.Instance) (cty.Value, []string, map[string]cty.Value, error) {
	if r.evalDirty || r.evalCtx == nil {
		ctx, diags := r.plan.Context(r.outputs)
		if diags.HasErrors() {
			return cty.NilVal, nil, nil, diags
		}
		r.evalCtx, r.evalDirty = ctx, false
	}
	cfg, diags := inst.Evaluate(r.evalCtx)
	if diags.HasErrors() {
		return cty.NilVal, nil, nil, diags
	}
	if !plans.IsWholeKnown(cfg) {
		return cty.NilVal, nil, nil, fmt.Errorf("configuration still waits for other steps %s", plans.UnknownText(markSet(cfg)))
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
		if v, ok := r.outputs[d]; ok {
			deps[d] = v
		}
	}
	return cfg, files, deps, nil
}

func markSet(v cty.Value) cty.ValueMarks {
	_, pvm := v.UnmarkDeepWithPaths()
	out := make(cty.ValueMarks)
	for _, p := range pvm {
		for m := range p.Marks {
			out[m] = struct{}{}
		}
	}
	return out
}

func (r *run) event(e Event) {
	if e.Outage == (OutageView{}) {
		e.Outage = r.outageView()
	}
	r.opts.Observe(e)
}

// outageView may be called from running steps (StepContext.Outage) while the
// scheduler opens or closes the outage, hence the lock.
func (r *run) outageView() OutageView {
	r.outageMu.Lock()
	defer r.outageMu.Unlock()
	o := r.plan.Campaign.Outage
	v := OutageView{Open: r.outageOpen}
	if o != nil {
		v.Budget, v.Reserve = o.Budget, o.Reserve
	}
	if r.outageOpen {
		v.Elapsed = r.opts.Clock.Now().Sub(r.outageBegin)
	}
	return v
}

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
			return fmt.Errorf("internal: scheduler stalled with %d unsettled step(s)", len(r.plan.Instances)-len(r.terminal))
		}
		select {
		case res := <-r.results:
			if err := r.finish(res); err != nil {
				return err
			}
		case <-r.ctxDone():
			if err := r.noteInterrupt(); err != nil {
				return err
			}
		}
	}
}

func (r *run) ctxDone() <-chan struct{} {
	if r.interrupted {
		return nil
	}
	return r.ctx.Done()
}

func (r *run) noteInterrupt() error {
	if r.interrupted {
		return nil
	}
	r.interrupted = true
	cause := context.Cause(r.ctx)
	sig := ""
	if cause != nil {
		sig = cause.Error()
	}
	if r.stopped == notStopped || r.stopped == stopDeferred {
		r.stopped, r.stopReason, r.stopClass = stopInterrupt, "interrupted ("+sig+")", ClassInterrupted
	}
	_, err := r.j.Append(Record{Kind: KindInterrupt, Signal: sig, Message: "running steps cancelled; always-steps run next"})
	r.event(Event{Kind: "note", Message: "interrupt received: cancelling running steps, then running always-steps (restore)"})
	return err
}

func (r *run) allSettled() bool { return len(r.terminal) >= len(r.plan.Instances) }

func (r *run) settled(addr string) bool { _, ok := r.terminal[addr]; return ok }

// usable reports whether a settled dependency lets its dependents run.
func (r *run) usable(rec *Record) bool {
	return rec.Status == StatusSucceeded || (rec.Status == StatusFailed && rec.Policy == PolicyRecord)
}

func (r *run) schedule() error {
	if r.ctx.Err() != nil && !r.interrupted {
		if err := r.noteInterrupt(); err != nil {
			return err
		}
	}
	nonAlwaysPending := false
	for _, inst := range r.plan.Instances {
		if !inst.Meta.Always && !r.settled(inst.Addr) {
			if r.stopped != notStopped {
				if _, running := r.running[inst.Addr]; !running {
					if err := r.settleUnrun(inst); err != nil {
						return err
					}
					continue
				}
			}
			nonAlwaysPending = true
		}
	}
	// claimed holds the resources of running steps and of earlier steps still
	// waiting, so a later step never overtakes an earlier one it clashes with.
	var claimed [][]string
	for _, inst := range r.running {
		claimed = append(claimed, inst.Meta.Uses)
	}
	for _, inst := range r.plan.Instances {
		if r.settled(inst.Addr) {
			continue
		}
		if _, ok := r.running[inst.Addr]; ok {
			continue
		}
		if inst.Meta.Always && nonAlwaysPending {
			continue // always-steps run last, after everything else has settled
		}
		ready := true
		for _, d := range inst.DependsOn {
			rec, ok := r.terminal[d]
			if !ok {
				ready = false
				break
			}
			if !inst.Meta.Always && !r.usable(rec) {
				if err := r.settleBlocked(inst, d, rec); err != nil {
					return err
				}
				ready = false
				break
			}
		}
		if !ready || r.settled(inst.Addr) {
			if !r.settled(inst.Addr) {
				claimed = append(claimed, inst.Meta.Uses)
			}
			continue
		}
		if len(r.running) >= r.opts.Parallelism || clashes(inst.Meta.Uses, claimed) {
			claimed = append(claimed, inst.Meta.Uses)
			continue
		}
		started, err := r.start(inst)
		if err != nil {
			return err
		}
		if started {
			claimed = append(claimed, inst.Meta.Uses)
		}
		if r.stopped != notStopped && !inst.Meta.Always {
			// A deferral or a failed start stopped the campaign: settle the rest.
			return r.schedule()
		}
	}
	return nil
}

// clashes: a step with no declared uses is exclusive and clashes with everything.
func clashes(uses []string, claimed [][]string) bool {
	for _, c := range claimed {
		if len(uses) == 0 || len(c) == 0 {
			return true
		}
		for _, a := range uses {
			for _, b := range c {
				if a == b {
					return true
				}
			}
		}
	}
	return false
}

// settleUnrun records why a step never ran after the campaign stopped.
func (r *run) settleUnrun(inst *plans.Instance) error {
	status := StatusBlocked
	msg := "not started: " + r.stopReason
	if r.stopped == stopDeferred {
		status = StatusDeferred
		msg = "deferred: " + r.stopReason
	}
	return r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: status, Class: r.stopClass, Message: msg, BlockedBy: r.stopReason})
}

func (r *run) settleBlocked(inst *plans.Instance, dep string, rec *Record) error {
	return r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusBlocked, Class: rec.Class,
		Message: fmt.Sprintf("not started: dependency %s is %s", dep, rec.Status), BlockedBy: dep})
}

func (r *run) settle(inst *plans.Instance, rec Record) error {
	written, err := r.j.Append(rec)
	if err != nil {
		return err
	}
	r.terminal[inst.Addr] = &written
	r.event(Event{Kind: "step_end", Addr: inst.Addr, Status: rec.Status, Class: rec.Class, Message: rec.Message, Always: inst.Meta.Always})
	return nil
}

func (r *run) timeoutOf(inst *plans.Instance) time.Duration {
	if inst.Meta.Timeout > 0 {
		return inst.Meta.Timeout
	}
	if dt, ok := r.reg[inst.Type].(DefaultTimeout); ok {
		return dt.DefaultTimeout()
	}
	return 0
}

// start begins one attempt. It returns false when the step was settled without
// running (deferred for the outage budget, or failed before it could start).
func (r *run) start(inst *plans.Instance) (bool, error) {
	step, ok := r.reg[inst.Type]
	if !ok {
		return false, fmt.Errorf("internal: no step type %q registered", inst.Type)
	}
	timeout := r.timeoutOf(inst)
	// Inside an outage (or when opening one) a step starts only if its hard bound
	// fits before the reserve; always-steps are what the reserve is for.
	opens := inst.Meta.Outage == "begin" && !r.outageOpen
	if !inst.Meta.Always && (r.outageOpen || opens) && r.plan.Campaign.Outage != nil {
		view := r.outageView()
		if opens {
			view.Elapsed = 0
		}
		if timeout > view.Available() {
			r.stopped, r.stopClass = stopDeferred, ClassOutageBudget
			r.stopReason = fmt.Sprintf("outage budget: %s needs up to %s but only %s remain before the %s reserve", inst.Addr, timeout, view.Available().Truncate(time.Second), view.Reserve)
			return false, r.settle(inst, Record{Kind: KindStepEnd, Step: inst.Addr, Status: StatusDeferred, Class: ClassOutageBudget, Message: r.stopReason,
				ElapsedS: view.Elapsed.Seconds(), BudgetS: view.Budget.Seconds(), ReserveS: view.Reserve.Seconds()})
		}
	}
	h := r.st.steps[inst.Addr]
	if h == nil {
		h = &stepHistory{}
		r.st.steps[inst.Addr] = h
	}
	attempt := len(h.attempts) + 1
	dir := attemptDir(inst.Addr, attempt)
	cfg, files, deps, err := r.inputsOf(inst)
	var sum string
	var parts *InputParts
	if err == nil {
		sum, parts, err = inputsHash(cfg, files, deps)
	}
	if opens {
		rec, aerr := r.j.Append(Record{Kind: KindOutageBegin, Step: inst.Addr, BudgetS: r.plan.Campaign.Outage.Budget.Seconds(), ReserveS: r.plan.Campaign.Outage.Reserve.Seconds()})
		if aerr != nil {
			return false, aerr
		}
		r.outageMu.Lock()
		r.outageOpen, r.outageBegin = true, rec.Time
		r.outageMu.Unlock()
		r.event(Event{Kind: "outage", Message: "outage opened by " + inst.Addr})
	}
	startRec, aerr := r.j.Append(Record{Kind: KindStepStart, Step: inst.Addr, Attempt: attempt, Dir: filepath.ToSlash(dir), InputsSHA256: sum, Inputs: parts})
	if aerr != nil {
		return false, aerr
	}
	a := &attemptRecord{n: attempt, start: &startRec}
	h.attempts = append(h.attempts, a)
	r.event(Event{Kind: "step_start", Addr: inst.Addr, Attempt: attempt, Always: inst.Meta.Always})
	now := r.opts.Clock.Now()
	// An always-step (restore) runs even when an input cannot be hashed or a frozen
	// file changed: bringing the incumbent back matters more than a clean record.
	// The problem is still its failure, folded in after it ran.
	var alwaysProblem *Result
	if err != nil {
		res := Failed(ClassConfig, "cannot evaluate inputs: %v", err)
		if !inst.Meta.Always || cfg == cty.NilVal {
			r.results <- runResult{inst: inst, attempt: attempt, dir: dir, start: now, res: res}
			r.running[inst.Addr] = inst
			return true, nil
		}
		alwaysProblem = &res
	}
	if res, bad := r.checkFrozen(files); bad {
		if !inst.Meta.Always {
			r.results <- runResult{inst: inst, attempt: attempt, dir: dir, start: now, res: res}
			r.running[inst.Addr] = inst
			return true, nil
		}
		alwaysProblem = &res
	}
	absDir := filepath.Join(r.opts.StateDir, dir)
	if err := os.MkdirAll(absDir, 0o755); err != nil {
		return false, fmt.Errorf("create attempt directory: %w", err)
	}
	parent := r.ctx
	if inst.Meta.Always {
		// Restore must not be cancelled by the interrupt that sent us to it.
		parent = context.WithoutCancel(r.ctx)
	}
	stepCtx, cancel := context.WithCancel(parent)
	if timeout > 0 {
		stepCtx, cancel = context.WithTimeout(parent, timeout)
	}
	unmarked, _ := cfg.UnmarkDeep()
	sc := &StepContext{
		Addr: inst.Addr, Instance: inst, Config: unmarked, Campaign: r.plan.Campaign.Name, Attempt: attempt,
		Dir: absDir, BaseDir: r.plan.BaseDir, StateDir: r.opts.StateDir, InputsSHA256: sum, Clock: r.opts.Clock,
		Log:      r.opts.Log.With().Str("step", inst.Addr).Logger(),
		Progress: func(p Progress) { r.opts.Observe(Event{Kind: "progress", Addr: inst.Addr, Progress: p}) },
		Outage:   r.outageView,
		History:  r.historyView,
		Secrets:  secretsOf(cfg),
	}
	r.running[inst.Addr] = inst
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
		r.results <- runResult{inst: inst, attempt: attempt, dir: dir, start: now, res: res}
	}()
	return true, nil
}

// checkFrozen re-hashes frozen files a step names; a change stops the campaign.
func (r *run) checkFrozen(files []string) (Result, bool) {
	for decl, want := range r.frozenHashes {
		abs := filepath.Join(r.plan.BaseDir, decl)
		named := false
		for _, f := range files {
			if filepath.Clean(f) == filepath.Clean(abs) {
				named = true
			}
		}
		if !named {
			continue
		}
		got, err := plans.FileSHA256(abs)
		if err != nil {
			return Failed(ClassFrozenInputChanged, "frozen input %s cannot be read: %v", decl, err), true
		}
		if got != want {
			return Failed(ClassFrozenInputChanged, "frozen input %s changed since the plan was frozen (sha256 %.12s… now %.12s…)", decl, want, got), true
		}
	}
	return Result{}, false
}

func (r *run) finish(rr runResult) error {
	inst := rr.inst
	delete(r.running, inst.Addr)
	res := rr.res
	absDir := filepath.Join(r.opts.StateDir, rr.dir)
	arts, err := hashArtefacts(r.opts.StateDir, absDir)
	if err != nil {
		return fmt.Errorf("hash artefacts of %s: %w", inst.Addr, err)
	}
	var outJSON, outType json.RawMessage
	if res.Outputs != cty.NilVal {
		conv, cerr := convert.Convert(res.Outputs, inst.OutputType())
		if cerr != nil {
			res = Failed(ClassInternal, "step returned outputs that do not fit its declared type: %v", cerr)
		} else {
			res.Outputs = conv
			outJSON, outType, err = encodeOutputs(conv)
			if err != nil {
				return err
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
		rec.Policy = policyFor(res.Class, inst.Meta.OnFailure)
	}
	written, err := r.j.Append(rec)
	if err != nil {
		return err
	}
	for _, a := range r.st.steps[inst.Addr].attempts {
		if a.n == rr.attempt {
			a.end = &written
		}
	}
	r.addHistory(written, res.Outputs)
	if res.Status != StatusInterrupted || inst.Meta.Always {
		r.terminal[inst.Addr] = &written
	}
	if res.Status == StatusSucceeded || written.Policy == PolicyRecord {
		if res.Outputs != cty.NilVal {
			r.outputs[inst.Addr] = res.Outputs
			r.evalDirty = true
		}
	}
	r.event(Event{Kind: "step_end", Addr: inst.Addr, Attempt: rr.attempt, Status: res.Status, Class: res.Class, Message: res.Message, Duration: time.Duration(rec.DurationS * float64(time.Second)), Always: inst.Meta.Always})
	// The manifest grows by this step's entries; the journal is read for it once per
	// apply, not once per step.
	if r.manifest == nil {
		fixed, err := planArtefacts(r.opts.StateDir)
		if err != nil {
			return err
		}
		r.manifest = append(fixed, stepEntries(r.j.Records())...)
	} else {
		r.manifest = append(r.manifest, endEntries(written)...)
	}
	if err := writeManifestEntries(r.opts.StateDir, r.manifest); err != nil {
		return err
	}
	switch {
	case res.Status == StatusSucceeded && inst.Meta.Outage == "end" && r.outageOpen:
		elapsed := r.opts.Clock.Now().Sub(r.outageBegin)
		if _, err := r.j.Append(Record{Kind: KindOutageEnd, Step: inst.Addr, ElapsedS: elapsed.Seconds(), BudgetS: r.outageView().Budget.Seconds(), ReserveS: r.outageView().Reserve.Seconds()}); err != nil {
			return err
		}
		r.outageMu.Lock()
		r.outageOpen = false
		r.outageMu.Unlock()
		r.event(Event{Kind: "outage", Message: fmt.Sprintf("outage closed by %s after %s", inst.Addr, elapsed.Truncate(time.Second)), Outage: OutageView{}})
	case res.Status == StatusInterrupted:
		if !inst.Meta.Always {
			// The interrupted step is settled for this apply; a later apply may try
			// it again as a new attempt, since nothing failed.
			r.terminal[inst.Addr] = &written
		}
		if r.stopped == notStopped {
			r.stopped, r.stopReason, r.stopClass = stopInterrupt, "interrupted during "+inst.Addr, ClassInterrupted
		}
	case res.Status == StatusFailed && written.Policy != PolicyRecord && !inst.Meta.Always:
		if r.stopped == notStopped || r.stopped == stopDeferred {
			r.stopped, r.stopClass = stopFailure, res.Class
			r.stopReason = fmt.Sprintf("%s failed (%s): %s", inst.Addr, res.Class, firstLine(res.Message))
		}
	}
	return nil
}

func (r *run) addHistory(rec Record, outputs cty.Value) {
	typ, _, _ := strings.Cut(rec.Step, ".")
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
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
