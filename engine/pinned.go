package engine

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rigor-bench/rigor/plans"
	"github.com/zclconf/go-cty/cty"
)

// pinnedDigests hashes, before a step starts, every campaign.frozen file and the
// pinned inputs its step type names; comparePinned then compares each with the
// digest that first pinned it. A new name is pinned by this start. A difference is
// the stop-class frozen_input_changed, raised before the step does anything.
//
// An always-step (restore) is held only to its own pinned inputs (its protected
// files): a changed recipe must not make a restored incumbent count as unrestored.
//
// pinnedDigests reads only the plan and the files, so it may run off the
// scheduler's goroutine (see start).
func (r *run) pinnedDigests(inst *plans.Instance, cfg cty.Value) (map[string]string, error) {
	digests := map[string]string{}
	if !inst.Meta.Always {
		for _, f := range r.plan.Campaign.Frozen {
			digests[FilePin(f)] = fileDigest(filepath.Join(r.plan.BaseDir, f))
		}
	}
	if pi, ok := r.reg[inst.Type].(PinnedInputs); ok {
		unmarked, _ := cfg.UnmarkDeep()
		d, err := pi.PinnedInputs(unmarked, r.plan.BaseDir)
		if err != nil {
			return digests, err
		}
		maps.Copy(digests, d)
	}
	return digests, nil
}

// comparePinned compares digests with what first pinned each name, pinning new
// names.
func (r *run) comparePinned(digests map[string]string) (map[string]string, *Result) {
	var changed []string
	for _, name := range slices.Sorted(maps.Keys(digests)) {
		want, ok := r.pinned[name]
		if !ok {
			r.pinned[name] = digests[name]
			continue
		}
		if want != digests[name] {
			changed = append(changed, fmt.Sprintf("%s: pinned %s, now %s", name, short(want), short(digests[name])))
		}
	}
	if len(changed) > 0 {
		res := Failed(ClassFrozenInputChanged, "frozen input changed since it was pinned, checked before anything was sent: %s", strings.Join(changed, "; "))
		return digests, &res
	}
	return digests, nil
}

// fileDigest is a file's sha256, or a description of why it has none: a missing
// file never matches the digest it was pinned with.
func fileDigest(path string) string {
	sum, err := plans.FileSHA256(path)
	if err != nil {
		return "unreadable"
	}
	return sum
}

func short(d string) string {
	if len(d) > 12 && !strings.Contains(d, " ") {
		return d[:12] + "…"
	}
	return d
}
