package calibrate

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// pythonP99TTFT is the aiohttp client, p99 |TTFT error| in ms per C, and
// pythonCPU its CPU seconds per 1,000 tokens, measured the same way on a 2-core
// machine. No Python client is installed here, so the ratios below are against these
// quoted figures, not a baseline of this run.
var (
	pythonP99TTFT = map[int]float64{1: 3.8, 16: 12.6, 64: 34, 256: 227, 1024: 1000}
	pythonCPU     = map[int]float64{1: 0.44, 256: 0.054}
)

// BenchmarkFidelity measures the client's timing error against an exact-schedule
// server running as a separate process. Run it with the client pinned to one core and
// the server (pinned by the benchmark with taskset when available) to the other:
//
//	go test -c -o bin/calibrate.test ./steps/calibrate
//	taskset -c 1 bin/calibrate.test -test.run '^$' -test.bench Fidelity -test.benchtime 1x
//
// Per C it reports p50/p99 |TTFT error| and |TPOT error| (ms), the client's CPU per
// 1,000 tokens (RUSAGE_SELF of this process: the client only), and the ratios
// p99_TTFT/python and cpu/python.
func BenchmarkFidelity(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "fidelityserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./internal/fidelityserver").CombinedOutput(); err != nil {
		b.Fatalf("build fidelityserver: %v\n%s", err, out)
	}
	for _, c := range []int{1, 16, 64, 256, 1024} {
		b.Run(fmt.Sprintf("C=%d", c), func(b *testing.B) {
			tpot := 5 * time.Millisecond
			if c >= 1024 {
				tpot = 20 * time.Millisecond // ~51k tok/s: within one core of simulator
			}
			url, stop := startFidelityServer(b, bin, tpot)
			defer stop()
			o := Options{Concurrency: c, Tokens: 16, Requests: requestsAt(c), TPOT: tpot, Timeout: 2 * time.Minute}
			cfg := o.ClientConfig(url, "rigor-calibration")
			var records []loadgen.Record
			cfg.OnRecord = func(r loadgen.Record) { records = append(records, r) }
			b.ResetTimer()
			for range b.N {
				records = records[:0]
				res, err := loadgen.Run(context.Background(), cfg, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				truth := fetchTruth(b, url)
				rep := NewReport(o, res, records, truth, time.Duration(res.BlockCPUS*float64(time.Second)), CPUScopeClient)
				if rep.Unmatched > 0 {
					b.Fatalf("%d requests unmatched; outcomes %v", rep.Unmatched, rep.Outcomes)
				}
				b.ReportMetric(*rep.TTFTMS.AbsP50, "ttft-p50-ms")
				b.ReportMetric(*rep.TTFTMS.AbsP99, "ttft-p99-ms")
				b.ReportMetric(*rep.TPOTMS.AbsP50, "tpot-p50-ms")
				b.ReportMetric(*rep.TPOTMS.AbsP99, "tpot-p99-ms")
				b.ReportMetric(rep.CPUSecondsPer1k, "cpu-s/1k-tok")
				b.ReportMetric(*rep.TTFTMS.AbsP99/pythonP99TTFT[c], "ttft-p99/python")
				if py, ok := pythonCPU[c]; ok {
					b.ReportMetric(rep.CPUSecondsPer1k/py, "cpu/python")
				}
				b.ReportMetric(float64(res.Dial.InBlock), "in-block-dials")
				// Separately labelled: the error of a TTFT taken from the scheduled send
				// (measurement error + schedule lag), the lag itself, and the server's
				// own queueing before its handler ran (inside the truth).
				b.ReportMetric(*rep.TTFTScheduledMS.AbsP99, "ttft-sched-p99-ms")
				b.ReportMetric(*rep.ScheduleLagMS.P99, "lag-p99-ms")
				b.ReportMetric(*rep.ServerQueueMS.AbsP99, "srvqueue-p99-ms")
				if rep.ArrivalSources[RecvKernel] != rep.Matched {
					b.Errorf("arrival sources %v: want every request stamped by the kernel", rep.ArrivalSources)
				}
			}
		})
	}
}

// startFidelityServer starts the server process, on core 0 when taskset exists.
func startFidelityServer(b *testing.B, bin string, tpot time.Duration) (string, func()) {
	args := []string{bin, "--tpot", tpot.String()}
	if p, err := exec.LookPath("taskset"); err == nil && os.Getenv("RIGOR_NO_PIN") == "" {
		args = append([]string{p, "-c", "0"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		b.Fatalf("fidelityserver: %v", err)
	}
	return strings.TrimSpace(line), func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
}

func fetchTruth(b *testing.B, url string) map[string]RequestTruth {
	resp, err := http.Get(url + TruthPath)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var t map[string]RequestTruth
	if err := json.NewDecoder(resp.Body).Decode(&t); err != nil {
		b.Fatal(err)
	}
	return t
}

// requestsAt sizes each run so its p99 rests on a few requests, not one: 400 or
// more from C=16 up; C=1 runs serially, so 100 keep it under ten seconds.
func requestsAt(c int) int {
	if c == 1 {
		return 100
	}
	return max(4*c, 400)
}
