package engine

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine/procgroup"
	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// recover decides what this apply does, from where the campaign stood:
//   - after a crash (running), it closes the attempts the dead apply left open,
//     closes an outage its restore had already ended, re-reads the targets it had
//     deployed, and goes on where it stopped; an interrupted step is re-run only if
//     the plan says it is safe to, otherwise the campaign is restored and held;
//   - after a failed restore, it retries the restore before anything else and holds;
//   - on a held campaign, it runs what is left in a new outage window, re-running
//     the deploys the restore undid.
//
// The always-steps are armed again in every apply that runs a step: a held
// campaign with nothing left to run runs none, its restore included (the apply
// that held it restored the incumbent).
func (r *run) recover(prev Lifecycle) {
	last := map[string]*Record{}
	for _, inst := range r.plan.Instances {
		if inst.Meta.Always {
			last[inst.Addr] = r.terminal[inst.Addr]
			delete(r.terminal, inst.Addr)
		}
	}
	switch prev {
	case LifecycleRestoreFailed:
		r.restoreOnly = true
		r.stopped, r.stopCause, r.stopClass = stopRecovery, CauseRestoreRetry, ClassCrash
		r.stopReason = "the previous apply's restore failed; it was retried before anything else, and the campaign is held for review"
		r.append(Record{Kind: KindRecovery, Message: "restore failed in the previous apply: retrying the always-steps (restore) first; nothing else runs", RestoreOnly: true, Cause: CauseRestoreRetry})
		alert := "the previous restore failed: retrying the always-steps (restore) before anything else"
		if r.outageView().Open {
			alert = "the previous restore failed and the outage is still open: retrying restore before anything else"
		}
		r.event(Event{Kind: "alert", Message: alert})
	case LifecycleRunning:
		r.recoverCrash()
	case LifecycleHeld:
		r.continueHeld(last)
	}
}

// recoverCrash handles a journal whose last apply never wrote campaign_end.
func (r *run) recoverCrash() {
	open := append([]*attemptRecord(nil), r.st.openRuns...)
	sort.Slice(open, func(i, j int) bool { return open[i].start.Seq < open[j].start.Seq })
	var interrupted []string
	reachedAlways := false
	// Commands of steps whose attempt directory a full disk kept the dead apply
	// from making recorded their groups at the state's root.
	rootNote, rootErr := r.killLeftovers(r.opts.StateDir, "", " (a step whose attempt directory could not be made)",
		"the commands of a step whose attempt directory could not be made")
	if rootErr == nil {
		procgroup.Forget(r.opts.StateDir)
	}
	for _, a := range open {
		dir := filepath.Join(r.opts.StateDir, filepath.FromSlash(a.start.Dir))
		// The commands the dead attempt started may still run (a restore, a
		// benchmark): they would run beside this apply's steps, and go on writing
		// into the evidence hashed next. They are killed first.
		note, _ := r.killLeftovers(dir, a.start.Step, "", "its commands")
		// Whatever the dead attempt wrote is hashed now, as it was found, so the
		// evidence of a crash is covered like any other.
		arts, _ := hashArtefacts(r.opts.StateDir, dir)
		rec := r.append(Record{
			Kind: KindStepEnd, Step: a.start.Step, Attempt: a.n, Dir: a.start.Dir, Artefacts: arts,
			Status: StatusInterrupted, Class: ClassCrash,
			Message: "the previous apply stopped during this attempt (crash or kill); every record it wrote is kept as it was found" + note,
		})
		a.end = &rec
		r.addHistory(rec, cty.NilVal)
		inst, ok := r.plan.Instance(a.start.Step)
		if !ok {
			continue
		}
		switch {
		case inst.Meta.Always:
			reachedAlways = true
		case r.rerunSafe(inst):
		default:
			interrupted = append(interrupted, inst.Addr)
		}
		if !inst.Meta.Always {
			r.terminal[inst.Addr] = &rec
		}
	}
	// Did the dead apply reach its always-steps, or take an interrupt? Then it
	// had finished or was stopping: what is left is the restore, not the
	// campaign. (A third interrupt exits at once, possibly while the running steps
	// were still being cancelled, before any always-step started; the one who
	// sent it wanted the campaign stopped, not continued.)
	// A dead apply that was itself running only its always-steps (a restore
	// retry, a recovery) and died before starting them leaves that to do too.
	allAlwaysDone := true
	signal := ""
	var prior *Record
	kept := map[string]bool{} // always-steps the dead apply did not run again
	for _, rec := range r.j.Records() {
		if rec.Seq <= r.st.lastApply {
			continue
		}
		switch rec.Kind {
		case KindInterrupt:
			signal = rec.Signal
		case KindRecovery:
			for _, a := range rec.Kept {
				kept[a] = true
			}
			if rec.RestoreOnly {
				p := rec
				prior = &p
				if signal == "" {
					signal = rec.Signal
				}
			}
		case KindStepStart:
			if inst, ok := r.plan.Instance(rec.Step); ok && inst.Meta.Always {
				reachedAlways = true
			}
		}
	}
	if reachedAlways {
		for _, inst := range r.plan.Instances {
			if inst.Meta.Always && !kept[inst.Addr] && !r.succeededSince(inst.Addr, r.st.lastApply) {
				allAlwaysDone = false
			}
		}
	}
	r.closeOutageFromEvidence()
	msg := fmt.Sprintf("the previous apply ended without closing the campaign: %d attempt(s) left open", len(open))
	// What this apply journals, so that an apply after it, should this one die too,
	// knows it ran only the always-steps, and why.
	recovery := Record{Kind: KindRecovery, Pid: os.Getpid()}
	switch {
	case prior != nil && prior.Cause == CauseRestoreRetry && signal == "":
		r.stopped, r.stopCause, r.stopClass = stopRecovery, CauseRestoreRetry, ClassCrash
		r.stopReason = "an earlier restore failed, and the apply that retried it died before it finished; the restore was retried again before anything else, and the campaign is held for review"
		recovery.Cause = CauseRestoreRetry
	case signal != "":
		// Whatever is left, the one who interrupted wanted the campaign stopped:
		// it is held, never completed by this apply.
		r.stopped, r.stopCause, r.stopClass = stopRecovery, CauseInterrupted, ClassInterrupted
		r.stopReason = "the previous apply was interrupted by " + signal + " and ended (a third interrupt, or a kill) before it finished; what its always-steps left ran now, and the campaign is held"
		recovery.Cause, recovery.Signal = CauseInterrupted, signal
	}
	switch {
	case reachedAlways && allAlwaysDone && !r.outageView().Open:
		// Everything but the campaign_end was done: nothing runs again, and the
		// always-steps count as the dead apply left them.
		for _, inst := range r.plan.Instances {
			if inst.Meta.Always {
				if h := r.st.steps[inst.Addr]; h != nil && h.final != nil {
					r.terminal[inst.Addr] = h.final
				} else {
					r.parked[inst.Addr] = true
				}
			}
		}
		r.parkRest()
		msg += "; its always-steps had all succeeded, so the campaign is only closed or held now"
		if r.stopCause == CauseRestoreRetry {
			r.stopReason = "an earlier restore failed; the apply that retried it restored the incumbent but died before it ended the campaign, which is held for review"
		}
	case reachedAlways || signal != "" || prior != nil:
		// Only the always-steps the dead apply had not finished run now.
		r.restoreOnly, recovery.RestoreOnly = true, true
		r.parkRest()
		r.keepSucceededAlways(kept)
		switch {
		case reachedAlways:
			msg += "; it had reached its always-steps, so only those it had not finished run now"
		case signal != "":
			msg += "; it had been interrupted (" + signal + ") and was cancelling its steps, so only its always-steps run now"
		default:
			why := map[string]string{CauseRestoreRetry: "retrying a failed restore"}[prior.Cause]
			msg += "; it was itself running only its always-steps (" + cmp.Or(why, "recovering an apply that had reached them") + ") and died before it finished them, so only they run now"
		}
	case len(interrupted) > 0:
		r.stopped, r.stopCause, r.stopClass = stopRecovery, CauseRecovered, ClassCrash
		r.stopReason = fmt.Sprintf("%s was interrupted when the previous apply died; every record it wrote is kept and counted, and it is not re-sent (declare rerun_safe = true to allow a re-run)", strings.Join(interrupted, ", "))
		msg += "; " + r.stopReason
	default:
		// Every step an apply interrupted and that may run again does: the one
		// this crash interrupted, and one an earlier crash or interrupt did whose
		// re-run this crash (killed in its recovery, say) never reached.
		for _, inst := range r.plan.Instances {
			if rec := r.terminal[inst.Addr]; rec != nil && !inst.Meta.Always && r.mayRerun(inst, rec) {
				delete(r.terminal, inst.Addr)
			}
		}
		if err := r.refresh(); err != nil {
			r.stopped, r.stopCause, r.stopClass = stopRecovery, CauseRecovered, ClassIdentity
			r.stopReason = err.Error()
			msg += "; " + err.Error()
		} else {
			msg += "; the targets it deployed are as the journal left them, so the campaign goes on"
		}
	}
	recovery.Message = msg + rootNote
	r.append(recovery)
	r.event(Event{Kind: "note", Message: msg})
}

// killLeftovers kills the process groups the dead apply's commands recorded in
// dir and still running (procgroup), alerts with what it did, and returns what
// the journal says of it ("" when nothing was recorded): the groups of step addr
// ("" for none), where adds to the alert, whose names the commands.
func (r *run) killLeftovers(dir, addr, where, whose string) (note string, err error) {
	killed, err := procgroup.KillLeft(dir)
	prefix := ""
	if addr != "" {
		prefix = addr + ": "
	}
	if len(killed) > 0 {
		note += "; killed what " + whose + " left running: " + procgroup.Describe(killed)
		r.event(Event{Kind: "alert", Addr: addr, Message: fmt.Sprintf("%sthe previous apply left %s running%s; killed", prefix, procgroup.Describe(killed), where)})
	}
	if err != nil {
		note += "; could not kill what its commands left running: " + err.Error()
		r.event(Event{Kind: "alert", Addr: addr, Message: fmt.Sprintf("%swhat the previous apply's commands left running may still run: %v", prefix, err)})
	}
	return note, err
}

// keepSucceededAlways leaves settled the always-steps the dead apply had run to
// success, and those it had kept from before without running them (kept), as it
// left them, so that only those it had not finished run now: a restore that
// succeeded before the apply died during a later always-step is not run a second
// time.
func (r *run) keepSucceededAlways(kept map[string]bool) {
	for _, inst := range r.plan.Instances {
		if !inst.Meta.Always || !kept[inst.Addr] && !r.succeededSince(inst.Addr, r.st.lastApply) {
			continue
		}
		if h := r.st.steps[inst.Addr]; h != nil && h.final != nil && h.final.Status == StatusSucceeded {
			r.terminal[inst.Addr] = h.final
		}
	}
}

// parkRest leaves every unsettled non-always step for a later apply.
func (r *run) parkRest() {
	for _, inst := range r.plan.Instances {
		if !inst.Meta.Always && !r.settled(inst.Addr) {
			r.parked[inst.Addr] = true
		}
	}
}

// succeededSince reports whether addr has a succeeded step_end after record seq.
func (r *run) succeededSince(addr string, seq int) bool {
	for _, rec := range r.j.Records() {
		if rec.Seq > seq && rec.Kind == KindStepEnd && rec.Step == addr && rec.Status == StatusSucceeded {
			return true
		}
	}
	return false
}

// closeOutageFromEvidence closes an outage whose restore (the always-step ending
// it) succeeded after it began, when the apply died before writing outage_end.
func (r *run) closeOutageFromEvidence() {
	if !r.outageView().Open {
		return
	}
	var begin int
	for _, rec := range r.j.Records() {
		if rec.Kind == KindOutageBegin {
			begin = rec.Seq
		}
	}
	for _, rec := range r.j.Records() {
		if rec.Seq <= begin || rec.Kind != KindStepEnd || rec.Status != StatusSucceeded {
			continue
		}
		if inst, ok := r.plan.Instance(rec.Step); ok && inst.Meta.Always && inst.Meta.Outage == "end" {
			r.closeOutage(inst.Addr, rec.Time, fmt.Sprintf("closed from the evidence of %s attempt %d, which succeeded before the previous apply died", rec.Step, rec.Attempt))
			return
		}
	}
}

// refresh re-reads every target a crashed apply had put in place, as Terraform
// refreshes state before planning: for each key, the latest instance that
// succeeded. A target that changed while no apply ran is never reused.
func (r *run) refresh() error {
	latest := map[string]*plans.Instance{}
	redo := map[string]bool{} // keys whose latest change was interrupted: it runs again
	var keys []string
	for _, e := range r.historyView() {
		inst, ok := r.plan.Instance(e.Addr)
		if !ok || (e.Status != StatusSucceeded && e.Status != StatusInterrupted) {
			continue
		}
		rf, ok := r.reg[inst.Type].(Refresher)
		if !ok {
			continue
		}
		cfg, _, _, err := r.inputsOf(inst, nil)
		if err != nil {
			continue
		}
		unmarked, _ := cfg.UnmarkDeep()
		key := rf.RefreshKey(unmarked)
		if e.Status == StatusInterrupted {
			// The dead apply was changing what runs there (a deploy it had begun);
			// the step runs again and establishes it, so there is nothing to hold
			// the world to until then.
			redo[key] = true
			continue
		}
		if _, seen := latest[key]; !seen {
			keys = append(keys, key)
		}
		latest[key], redo[key] = inst, false
	}
	keys = slices.DeleteFunc(keys, func(k string) bool { return redo[k] })
	var problems []string
	for _, key := range keys {
		inst := latest[key]
		cfg, _, _, _ := r.inputsOf(inst, nil)
		unmarked, _ := cfg.UnmarkDeep()
		ctx, cancel := context.WithTimeout(r.ctx, time.Minute)
		err := r.reg[inst.Type].(Refresher).Refresh(ctx, unmarked, r.outputs[inst.Addr])
		cancel()
		rec := Record{Kind: KindRefresh, Step: inst.Addr, Status: StatusSucceeded, Message: "in place as recorded: " + key}
		if err != nil {
			rec.Status, rec.Class, rec.Message = StatusFailed, ClassIdentity, err.Error()
			problems = append(problems, fmt.Sprintf("%s: %v", inst.Addr, err))
		}
		r.append(rec)
	}
	if len(problems) > 0 {
		return fmt.Errorf("refresh: the world no longer matches the journal, and a changed target is never reused: %s", strings.Join(problems, "; "))
	}
	return nil
}

// continueHeld makes a held campaign's remaining steps runnable again: those held
// back by the stop, deferred for the budget, or interrupted and safe to re-run.
// The restore at the end of the last apply undid what the deploys had put in
// place, so the nearest deploy (any Refresher) above each remaining step runs again.
// With nothing left to run, the always-steps keep the records last holds (the
// restore that held the campaign brought the incumbent back); one that has never
// run (added by an amendment) runs now.
func (r *run) continueHeld(last map[string]*Record) {
	var again, fresh []string
	for _, inst := range r.plan.Instances {
		rec := r.terminal[inst.Addr]
		if inst.Meta.Always {
			continue
		}
		if rec == nil {
			// Never settled: added by an amendment, or parked by an earlier apply.
			// It runs against what its deploys put in place, so they run again too.
			fresh = append(fresh, inst.Addr)
			continue
		}
		if r.heldBack(inst, rec) || r.mayRerun(inst, rec) {
			again = append(again, inst.Addr)
		}
	}
	for _, a := range again {
		delete(r.terminal, a)
	}
	redeploy := map[string]bool{}
	for _, a := range append(append([]string(nil), again...), fresh...) {
		inst := r.instance(a)
		if _, isRefresher := r.reg[inst.Type].(Refresher); isRefresher {
			continue
		}
		if placer, ok := r.placedBy(inst); ok {
			if placer != "" {
				redeploy[placer] = true
			}
			continue
		}
		for _, anc := range r.nearestRefreshers(inst) {
			if rec := r.terminal[anc]; rec != nil && rec.Status == StatusSucceeded {
				redeploy[anc] = true
			}
		}
	}
	// The restore closed the outage window the steps ran in: what runs again runs
	// in a new one, which the first of them to start opens (start). The step that
	// opened the last one is not run again for it: a deploy placed after it (the
	// incumbent of an ABBA's last arm) would be overwritten.
	if r.plan.Campaign.Outage != nil && r.window >= 1 && !r.outageView().Open && len(again)+len(fresh) > 0 {
		r.reopen = true
	}
	for a := range redeploy {
		delete(r.terminal, a)
	}
	msg := fmt.Sprintf("continuing a held campaign: %d step(s) to run", len(again)+len(fresh))
	if len(fresh) > 0 {
		msg += fmt.Sprintf(" (%d of them never started before)", len(fresh))
	}
	if len(redeploy) > 0 {
		names := slices.Sorted(func(yield func(string) bool) {
			for a := range redeploy {
				if !yield(a) {
					return
				}
			}
		})
		msg += fmt.Sprintf(", after running again %s, which the restore undid", strings.Join(names, ", "))
	}
	var kept []string
	if len(again)+len(fresh) == 0 {
		var never []string
		for _, inst := range r.plan.Instances {
			if rec, ok := last[inst.Addr]; ok && rec != nil {
				r.terminal[inst.Addr] = rec
				kept = append(kept, inst.Addr)
			} else if ok {
				never = append(never, inst.Addr)
			}
		}
		if len(never) == 0 {
			msg += "; no step runs, the always-steps (restore) neither: they ran when the campaign was held"
		} else {
			msg += "; of the always-steps only " + strings.Join(never, ", ") + " runs, which never ran (added by an amendment); the others ran when the campaign was held"
		}
	}
	r.append(Record{Kind: KindRecovery, Message: msg, Kept: kept})
	r.event(Event{Kind: "note", Message: msg})
}

// placedBy finds the step that last put in place what inst runs against
// (RunsAgainst and Placer name the same target): the deploy to run again before it.
// It returns "" when that was an always-step (the restore brought it back, so it is
// in place), and false when inst's step type does not say what it runs against.
func (r *run) placedBy(inst *plans.Instance) (string, bool) {
	ra, ok := r.reg[inst.Type].(RunsAgainst)
	if !ok {
		return "", false
	}
	cfg, _, _, err := r.inputsOf(inst, nil)
	if err != nil {
		return "", false
	}
	unmarked, _ := cfg.UnmarkDeep()
	want := ra.RunsAgainst(unmarked)
	if want == "" {
		return "", false
	}
	latest := ""
	for _, e := range r.historyView() {
		placer, ok := r.plan.Instance(e.Addr)
		if !ok || e.Status != StatusSucceeded {
			continue
		}
		pl, ok := r.reg[placer.Type].(Placer)
		if !ok {
			continue
		}
		pcfg, _, _, err := r.inputsOf(placer, nil)
		if err != nil {
			continue
		}
		pu, _ := pcfg.UnmarkDeep()
		if pl.Places(pu) == want {
			latest = e.Addr
			if placer.Meta.Always {
				latest = ""
			}
		}
	}
	return latest, true
}

// walkUp visits the non-always steps inst waits for, directly or not, nearest
// first and each once; visit returns false not to walk on past that step.
func (r *run) walkUp(inst *plans.Instance, visit func(addr string, dep *plans.Instance) bool) {
	seen := map[string]bool{}
	queue := append([]string(nil), inst.DependsOn...)
	for len(queue) > 0 {
		a := queue[0]
		queue = queue[1:]
		if seen[a] {
			continue
		}
		seen[a] = true
		dep := r.instance(a)
		if dep == nil || dep.Meta.Always {
			continue
		}
		if visit(a, dep) {
			queue = append(queue, dep.DependsOn...)
		}
	}
}

// nearestRefreshers walks up the dependencies of inst and returns, on each path,
// the first instance of a Refresher type: the step that put in place what inst
// runs against.
func (r *run) nearestRefreshers(inst *plans.Instance) []string {
	var out []string
	r.walkUp(inst, func(a string, dep *plans.Instance) bool {
		if _, ok := r.reg[dep.Type].(Refresher); ok {
			out = append(out, a)
			return false
		}
		return true
	})
	sort.Strings(out)
	return out
}
