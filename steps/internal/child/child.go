// Package child is the environment steps give the processes they start (exec
// commands, nsys and the docker CLI, restore preflights): only what the child is
// given. rigor's own environment holds RIGOR_VAR_<name> values, sensitive ones
// among them, and whatever credentials the operator's shell exports; a child that
// records its environment (many benchmark harnesses do) would put them into
// evidence. So a child inherits only the variables in Inherited and gets, on top,
// what its step declares (the step's env argument, or a variable rigor sets such as
// RIGOR_ENDPOINT). A sensitive value reaches a child only through such a
// declaration; steps redact it from the child's captured output with
// engine.Redactor.
//
// Command starts such a child in a process group of its own and kills the group a
// little before the step's bound, so the step returns, output kept, by its bound.
// KillAll kills the groups of every child still running, for an exit that cannot
// wait for them (a third interrupt). From a command's start until it exits, its
// group is recorded in the step attempt's directory (engine/procgroup), so that should rigor be
// killed, the next apply kills the group before anything else runs.
//
// Out of scope: the environment of containers, which is the target's env and is
// passed by the Docker Engine, never inherited from rigor.
package child

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/zclconf/go-cty/cty"
)

// Inherited are the variables a child inherits from rigor's environment, when set:
// enough to find programs, a home directory for their configuration, the locale and
// a place for temporary files.
var Inherited = []string{"PATH", "HOME", "LANG", "TMPDIR"}

// Env is the environment of a child: the Inherited variables rigor has, then
// declared (KEY=VALUE entries, in order; for a key given twice the last wins, as
// with os/exec).
func Env(declared ...string) []string {
	env := make([]string, 0, len(Inherited)+len(declared))
	for _, k := range Inherited {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, declared...)
}

// Declared reads a step's env argument (a map of strings, possibly null) into
// KEY=VALUE entries sorted by key. An entry whose value is null is an error: the
// plan declared a variable and gave it nothing.
func Declared(v cty.Value) ([]string, error) {
	if v.IsNull() || !v.IsKnown() {
		return nil, nil
	}
	m := v.AsValueMap()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k].IsNull() || !m[k].IsKnown() {
			return nil, fmt.Errorf("env %s has no value", k)
		}
		out = append(out, k+"="+m[k].AsString())
	}
	return out, nil
}
