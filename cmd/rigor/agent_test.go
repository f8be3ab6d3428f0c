package main

import (
	"net"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands of agents.txtar.
func init() { scriptCmds["wait-listen"] = cmdWaitListen }

// cmdWaitListen: wait-listen HOST:PORT waits until something accepts TCP
// connections there (10 s at most): a background `rigor agent` is up.
func cmdWaitListen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wait-listen HOST:PORT")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", args[0], time.Second)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("nothing listens on %s after 10 s: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
