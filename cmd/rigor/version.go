package main

import (
	"runtime/debug"
	"sync"
)

// buildVersion is rigor's version and commit, from the module and VCS information
// the Go toolchain stamps into the binary: "v1.2.3 (3f2a9c1e0b7d, modified)" for a
// release, "devel (3f2a9c1e0b7d)" for a build from a checkout. The journal's
// plan_frozen and apply_start records (engine.Options.Rigor), every block's
// result.json (engine.StepContext.Rigor) and rigor bench's results record it.
// `make build` stamps the commit even where GOFLAGS has -buildvcs=false.
var buildVersion = sync.OnceValue(func() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel (no build information)"
	}
	v := info.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	rev, modified := "", false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	switch {
	case rev == "":
		return v + " (commit unknown: built without VCS information, e.g. by go run)"
	case modified:
		return v + " (" + rev[:min(12, len(rev))] + ", modified)"
	default:
		return v + " (" + rev[:min(12, len(rev))] + ")"
	}
})
