package main

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rigor": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// TestScripts runs the CLI end to end from txtar scripts in testdata/script.
func TestScripts(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("QUICKSTART", filepath.Join(root, "examples", "quickstart", "campaign.hcl"))
			env.Setenv("WAVE1", filepath.Join(root, "examples", "flare-wave1"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"pilot-of":      cmdPilotOf,
			"count-within":  cmdCountWithin,
			"cached-within": cmdCachedWithin,
		},
	})
}
