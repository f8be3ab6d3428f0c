/*
Command fidelityserver is the exact-schedule simulator of the calibration, as a
process of its own, so that the fidelity benchmark can pin it to one core and the
client to another. It prints its base URL on the first line of stdout, serves the
per-request truth (handler entry, first and last chunk flush) at
calibrate.TruthPath, and exits on SIGINT or SIGTERM.
*/
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/rigor-bench/rigor/steps/calibrate"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on")
	tpot := flag.Duration("tpot", 0, "exact time per output token (required)")
	maxRunning := flag.Int("max-running", 4096, "running batch size (>= the client's concurrency)")
	flag.Parse()
	if *tpot <= 0 {
		fmt.Fprintln(os.Stderr, "fidelityserver: --tpot must be > 0")
		os.Exit(2)
	}
	ts, err := calibrate.ListenTruth(*listen, calibrate.Schedule{TPOT: *tpot, MaxRunning: *maxRunning})
	if err != nil {
		fmt.Fprintln(os.Stderr, "fidelityserver:", err)
		os.Exit(1)
	}
	fmt.Println(ts.URL())
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	<-ch
	ts.Close()
}
