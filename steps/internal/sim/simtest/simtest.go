// Package simtest gives tests a simulator container host of their own: in a temporary
// directory, never the user's, and with every server it started stopped when the
// test ends, so no test leaves a process behind.
//
// Out of scope: anything a program (rather than a test) needs; programs use
// sim.OpenHost.
package simtest

import (
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// Host opens a host called name in a fresh temporary directory and stops every
// container on it at the end of the test (failing the test if one cannot be stopped).
func Host(t testing.TB, name string) *sim.Host {
	t.Helper()
	h, err := sim.OpenHost(name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	Cleanup(t, h)
	return h
}

// Cleanup stops every running container of h when the test ends.
func Cleanup(t testing.TB, h *sim.Host) {
	t.Helper()
	t.Cleanup(func() {
		if _, err := h.StopAll(); err != nil {
			t.Errorf("stop the simulator servers of host %s: %v", h.Name(), err)
		}
	})
}

// Target is a target object on h, as a step's configuration carries it: attrs plus
// the host (name, runtime "sim", sim_dir) and, unless attrs set them, a name.
func Target(h *sim.Host, attrs map[string]cty.Value) cty.Value {
	m := map[string]cty.Value{"name": cty.StringVal("t")}
	for k, v := range attrs {
		m[k] = v
	}
	m["host"] = cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal(h.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(h.Dir()),
	})
	return cty.ObjectVal(m)
}
