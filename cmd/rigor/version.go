package main

import (
	"runtime/debug"
	"sync"
)

// buildCommit and buildModified are set by `make build` (-ldflags -X) from git. The
// toolchain stamps no VCS information when GOFLAGS has -buildvcs=false, nor in a
// git worktree (its .git is a file, which go build does not recognise), so the
// Makefile passes the commit itself; buildVersion prefers the toolchain's stamp.
var (
	buildCommit   string
	buildModified string // "true" when the checkout had uncommitted changes
)

// buildVersion is rigor's version and commit, from the module and VCS information
// the Go toolchain stamps into the binary, or from `make build`'s buildCommit:
// "v1.2.3 (3f2a9c1e0b7d, modified)" for a release, "devel (3f2a9c1e0b7d)" for a
// build from a checkout. The journal's plan_frozen and apply_start records
// (engine.Options.Rigor), every block's result.json (engine.StepContext.Rigor),
// the report's Identities (from those journal records) and rigor bench's results
// record it.
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
	if rev == "" {
		rev, modified = buildCommit, buildModified == "true"
	}
	return versionString(v, rev, modified)
})

func versionString(v, rev string, modified bool) string {
	switch {
	case rev == "":
		return v + " (commit unknown: built without VCS information, e.g. by go run; `make build` records it)"
	case modified:
		return v + " (" + rev[:min(12, len(rev))] + ", modified)"
	default:
		return v + " (" + rev[:min(12, len(rev))] + ")"
	}
}
