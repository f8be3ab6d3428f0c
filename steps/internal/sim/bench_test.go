package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkStreamC1024 streams 1024 concurrent requests of 200 tokens each, every token
// 10 ms after the previous one, in a closed loop (each client stream sends its next
// request as soon as the last one ended): the schedule asks for 1024*200 tokens per
// 1.99 s plus a round trip, just under 102,400 tokens/s, each token in its own SSE event
// and write. One op is 1024*200 = 204,800 tokens streamed.
//
// Method. The server runs in the benchmark process (with -cpu setting its GOMAXPROCS);
// the client is a separate process (this test binary re-run as TestBenchClientProcess),
// pinned with taskset to a CPU the server process may not use when one exists, else to
// the last online CPU. The clock starts after a warm-up of benchWarmup, which opens the
// connections and lets the streams' start times spread out, so the figures are of the
// steady state at C = 1024 and not of a wave's ramp. Reported:
//
//   - tok/s: tokens the server wrote per wall-clock second (Stats.GeneratedTokens,
//     counted when the write that carried them returned); the schedule caps it.
//   - tok/flush: tokens per write; 1 while the server keeps to its schedule, above 1
//     when it fell behind and coalesced due chunks.
//   - srv-cores: the server process's CPU time (getrusage, user+system, all threads,
//     the kernel's loopback TCP work for its writes included) per wall-clock second: how
//     many cores serving this load took.
//   - tok/srv-core-s: tokens per second of server CPU time, i.e. what one fully busy
//     server core streams at this per-token cost.
//
// For the one-core figure confine the server to one core as well (the client then goes
// to another):
//
//	go test -c -o /tmp/sim.test ./steps/internal/sim
//	taskset -c 0 /tmp/sim.test -test.run '^$' -test.bench StreamC1024 -test.cpu 1 -test.benchtime 3x
//
// Unpinned, go test ./steps/internal/sim -run '^$' -bench StreamC1024 -cpu 1 gives
// similar figures, the server's single P sharing the machine with the client.
func BenchmarkStreamC1024(b *testing.B) {
	p := builtinProfiles["incumbent"]
	// Prefill out of the way and a flat 10 ms TPOT, so that the load is the token stream itself.
	p.PrefillBase, p.PrefillSlowdownPerRunning, p.PrefillTokensPerSecond = 0, 0, 1e9
	p.TPOTBase, p.TPOTPerRunning = 10*time.Millisecond, 0
	benchmarkStreams(b, Config{Profile: p, MaxRunning: 1024}, 200)
}

// BenchmarkStreamC1024Capacity offers twice what BenchmarkStreamC1024's schedule
// asks (a 5 ms TPOT, about 204,800 tokens/s due), so the figure is what the server
// sustains rather than what the schedule allows. tok/flush above 1 says it fell
// behind and sent due tokens together; each token still reaches the client.
func BenchmarkStreamC1024Capacity(b *testing.B) {
	p := builtinProfiles["incumbent"]
	p.PrefillBase, p.PrefillSlowdownPerRunning, p.PrefillTokensPerSecond = 0, 0, 1e9
	p.TPOTBase, p.TPOTPerRunning = 5*time.Millisecond, 0
	benchmarkStreams(b, Config{Profile: p, MaxRunning: 1024}, 200)
}

// BenchmarkStreamC1024Unpaced is the same load at a time scale so small that every token
// is due at once: the figure is the raw cost of generating, framing and reading tokens,
// with chunks that are already due coalesced into one write.
func BenchmarkStreamC1024Unpaced(b *testing.B) {
	benchmarkStreams(b, Config{Profile: builtinProfiles["incumbent"], TimeScale: 1e-6, MaxRunning: 1024}, 200)
}

const (
	benchStreams   = 1024
	benchWarmup    = 2500 * time.Millisecond
	benchClientEnv = "RIGOR_SIM_BENCH_CLIENT" // "url streams maxTokens" in the client process
)

func benchmarkStreams(b *testing.B, cfg Config, maxTokens int) {
	// Every stream runs to max_tokens.
	cfg.Profile.OutputMedianTokens, cfg.Profile.OutputSigma = 1e9, 0
	rn, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rn.Close()
	cl := startBenchClient(b, rn.URL(), benchStreams, maxTokens)
	defer cl.close()
	if err := cl.send("run"); err != nil {
		b.Fatal(err)
	}
	time.Sleep(benchWarmup)

	srv := rn.Server()
	b.ResetTimer()
	st0, cpu0, start := srv.Stats(), processCPU(), time.Now()
	want := st0.GeneratedTokens + int64(b.N)*benchStreams*int64(maxTokens)
	for srv.Stats().GeneratedTokens < want {
		time.Sleep(5 * time.Millisecond)
	}
	st, cpu, elapsed := srv.Stats(), processCPU()-cpu0, time.Since(start)
	b.StopTimer()
	if err := cl.send("stop"); err != nil {
		b.Fatal(err)
	}
	if err := cl.result(); err != nil {
		b.Fatal(err)
	}

	total := st.GeneratedTokens - st0.GeneratedTokens
	b.ReportMetric(float64(total)/elapsed.Seconds(), "tok/s")
	b.ReportMetric(float64(total)/float64(st.TokenFlushes-st0.TokenFlushes), "tok/flush")
	if cpu > 0 {
		b.ReportMetric(cpu.Seconds()/elapsed.Seconds(), "srv-cores")
		b.ReportMetric(float64(total)/cpu.Seconds(), "tok/srv-core-s")
	}
}

// benchClient is the client process of benchmarkStreams, driven one line per wave.
type benchClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startBenchClient(b *testing.B, url string, streams, maxTokens int) *benchClient {
	b.Helper()
	args := []string{"-test.run=^TestBenchClientProcess$", "-test.count=1", "-test.timeout=0"}
	name := os.Args[0]
	if cpu, ok := clientCPU(); ok {
		if tp, err := exec.LookPath("taskset"); err == nil {
			args = append([]string{"-c", strconv.Itoa(cpu), name}, args...)
			name = tp
		}
	}
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", benchClientEnv, url, streams, maxTokens))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	return &benchClient{cmd: cmd, in: in, out: bufio.NewScanner(out)}
}

func (c *benchClient) send(cmd string) error {
	_, err := io.WriteString(c.in, cmd+"\n")
	return err
}

// result waits for the client's report after "stop".
func (c *benchClient) result() error {
	for c.out.Scan() {
		line := c.out.Text()
		if strings.HasPrefix(line, "bench-client ok") {
			return nil
		}
		if rest, ok := strings.CutPrefix(line, "bench-client error "); ok {
			return fmt.Errorf("client: %s", rest)
		}
	}
	return fmt.Errorf("client process ended: %v", c.out.Err())
}

func (c *benchClient) close() {
	_ = c.in.Close()
	_ = c.cmd.Wait()
}

// clientCPU picks the CPU for the client process: the last online CPU that this process
// is not allowed to run on, else the last online CPU. ok is false on a single CPU or where
// Linux's files are missing.
func clientCPU() (int, bool) {
	online, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0, false
	}
	cpus := parseCPUList(string(online))
	if len(cpus) < 2 {
		return 0, false
	}
	allowed := map[int]bool{}
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if rest, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				for _, c := range parseCPUList(rest) {
					allowed[c] = true
				}
			}
		}
	}
	for i := len(cpus) - 1; i >= 0; i-- {
		if !allowed[cpus[i]] {
			return cpus[i], true
		}
	}
	return cpus[len(cpus)-1], true
}

// parseCPUList parses Linux's CPU list format, e.g. "0-3,8".
func parseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(strings.TrimSpace(s), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for c := a; c <= z; c++ {
			out = append(out, c)
		}
	}
	return out
}

// TestBenchClientProcess is not a test: it is the client process of benchmarkStreams, and
// returns at once unless that started it. On "run" from stdin it starts its streams, each
// sending a request, reading the response to its end and checking its token count, over
// and over; on "stop" it ends them and answers "bench-client ok" or "bench-client error
// <first error>" on stdout.
func TestBenchClientProcess(t *testing.T) {
	spec := os.Getenv(benchClientEnv)
	if spec == "" {
		return
	}
	var (
		url                string
		streams, maxTokens int
	)
	if _, err := fmt.Sscan(spec, &url, &streams, &maxTokens); err != nil {
		t.Fatalf("%s=%q: %v", benchClientEnv, spec, err)
	}
	tr := &http.Transport{MaxIdleConns: streams, MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url += "/v1/chat/completions"
	raw, _ := json.Marshal(streamChat(promptOf("bench", 64), maxTokens))
	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() || in.Text() != "run" {
		return
	}
	ctx, stop := context.WithCancel(context.Background())
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for s := 0; s < streams; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil; i++ {
				got, err := streamTokens(ctx, client, url, strconv.Itoa(s)+"-"+strconv.Itoa(i), raw)
				if ctx.Err() != nil {
					return
				}
				if err == nil && got != maxTokens {
					err = fmt.Errorf("stream reported %d tokens, want %d", got, maxTokens)
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}(s)
	}
	for in.Scan() && in.Text() != "stop" {
	}
	stop()
	wg.Wait()
	if first != nil {
		fmt.Printf("bench-client error %v\n", strings.ReplaceAll(first.Error(), "\n", " "))
		return
	}
	fmt.Println("bench-client ok")
}

var completionTokensKey = []byte(`"completion_tokens":`)

// streamTokens reads one stream to its end with a cheap client and returns the usage's
// completion_tokens.
func streamTokens(ctx context.Context, client *http.Client, url, id string, body []byte) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndex(data, completionTokensKey)
	if i < 0 || !bytes.HasSuffix(data, []byte("data: [DONE]\n\n")) {
		return 0, io.ErrUnexpectedEOF
	}
	rest := data[i+len(completionTokensKey):]
	end := bytes.IndexByte(rest, ',')
	return strconv.Atoi(string(rest[:end]))
}
