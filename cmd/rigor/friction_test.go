package main

import (
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands of the first-run and friction scripts (interrupt.txtar,
// portinuse.txtar).
func init() {
	scriptCmds["waitfile"] = cmdWaitFile
	scriptCmds["holdport"] = cmdHoldPort
}

// cmdHoldPort: holdport VAR listens on a free port of 127.0.0.1 until the script
// ends and sets VAR to its number: a port that another process holds.
func cmdHoldPort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: holdport VAR")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ts.Fatalf("holdport: %v", err)
	}
	ts.Defer(func() { l.Close() })
	ts.Setenv(args[0], strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
}

// cmdWaitFile: waitfile FILE TIMEOUT waits until FILE exists, so a script can
// signal a background apply once a step is running rather than after a guess.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfile FILE TIMEOUT")
	}
	d, err := time.ParseDuration(args[1])
	if err != nil {
		ts.Fatalf("waitfile: %v", err)
	}
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within %s", args[0], d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
