package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"rigor": func() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) },
	})
}

// exitcodeCmd: exitcode N CMD ARGS... runs CMD and fails unless it exits with N:
// the exit codes are a documented contract, not just "non-zero".
func exitcodeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N command [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		got = ee.ExitCode()
	case err != nil:
		ts.Fatalf("exitcode: %v", err)
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// TestScripts runs the CLI end to end from txtar scripts in testdata/script.
func TestScripts(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	testscript.Run(t, testscript.Params{
		Dir:  "testdata/script",
		Cmds: scriptCmds,
		// [gpu] holds on a machine with an NVIDIA driver: the output of `rigor gpus`
		// differs there, and both cases are tested where they occur.
		// [tmpfs] holds where a tmpfs can be mounted, for the disk-full scripts.
		Condition: func(cond string) (bool, error) {
			switch cond {
			case "gpu":
				_, err := os.Stat("/dev/nvidiactl")
				return err == nil, nil
			case "tmpfs":
				return canMountTmpfs()
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("QUICKSTART", filepath.Join(root, "examples", "quickstart", "campaign.hcl"))
			env.Setenv("FLARE", filepath.Join(root, "examples", "flare-wave1", "campaign.hcl"))
			// Sim targets are server processes that outlive `plan apply`: each script
			// keeps them under its own work directory, and they stop when it ends.
			run := filepath.Join(env.WorkDir, "run")
			env.Setenv("XDG_RUNTIME_DIR", run)
			env.Defer(func() {
				if err := stopSims(run); err != nil {
					env.T().Fatal(err)
				}
			})
			env.Setenv("WAVE1", filepath.Join(root, "examples", "flare-wave1"))
			env.Setenv("DIAGNOSTICS", filepath.Join(root, "examples", "diagnostics"))
			return nil
		},
	})
}
