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
			// Sim targets are server processes that outlive `plan apply`: each script
			// keeps them under its own work directory, and they stop when it ends.
			run := filepath.Join(env.WorkDir, "run")
			env.Setenv("XDG_RUNTIME_DIR", run)
			env.Defer(func() {
				if err := stopSims(run); err != nil {
					env.T().Fatal(err)
				}
			})
			return nil
		},
	})
}
