package main

import (
	"bytes"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Script commands for `rigor bench` against a `rigor sim serve` started in the
// background of a script.
func init() {
	scriptCmds["freeport"] = cmdFreePort
	scriptCmds["wait-ready"] = cmdWaitReady
	scriptCmds["wait-lines"] = cmdWaitLines
	scriptCmds["post"] = cmdPost
	scriptCmds["valid-chart"] = cmdValidChart
}

// cmdFreePort: freeport VAR sets VAR to a loopback port that was free a moment ago,
// so scripts running in parallel (and other worktrees' tests) do not collide.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	port, err := unusedPort()
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(port))
}

// cmdWaitReady: wait-ready URL polls URL until it answers 2xx (10 s at most).
func cmdWaitReady(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: wait-ready URL")
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(args[0])
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 == 2 {
				return
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s not ready after 10 s: %v", args[0], err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitLines: wait-lines FILE N waits until FILE has at least N lines (20 s at most).
func cmdWaitLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: wait-lines FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(ts.MkAbs(args[0]))
		if bytes.Count(b, []byte("\n")) >= n {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("%s has %d lines after 20 s, want %d", args[0], bytes.Count(b, []byte("\n")), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cmdPost: post URL BODY posts BODY as JSON and fails unless the answer is 2xx.
func cmdPost(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: post URL BODY")
	}
	resp, err := http.Post(args[0], "application/json", strings.NewReader(args[1]))
	ts.Check(err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		ts.Fatalf("POST %s: %d %s", args[0], resp.StatusCode, b)
	}
	fmt.Fprintf(ts.Stdout(), "%s", b)
}

// cmdValidChart: valid-chart PNG SVG checks that PNG decodes as a PNG image of some
// size and SVG is an SVG document with text in it (the axis labels).
func cmdValidChart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: valid-chart PNG SVG")
	}
	f, err := os.Open(ts.MkAbs(args[0]))
	ts.Check(err)
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
		ts.Fatalf("%s is %dx%d", args[0], b.Dx(), b.Dy())
	}
	svg, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	for _, want := range []string{"<svg", "Pareto front", "output tok/s", "TTFT p50 (ms)", "TPOT p50 (ms)"} {
		if !bytes.Contains(svg, []byte(want)) {
			ts.Fatalf("%s lacks %q", args[1], want)
		}
	}
}
