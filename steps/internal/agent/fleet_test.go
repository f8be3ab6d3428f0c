package agent

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/loadgen/corpus"
	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// TestMain doubles as a real agent process: with RIGOR_TEST_AGENT set, the test
// binary serves as `rigor agent` on a free port and prints its URL.
func TestMain(m *testing.M) {
	if os.Getenv("RIGOR_TEST_AGENT") != "" {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("tcp://%s\n", ln.Addr())
		_ = (&Server{}).Serve(context.Background(), ln)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startAgents starts n agents in this process, each on its own real socket.
func startAgents(t *testing.T, n int) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var urls []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go (&Server{}).Serve(ctx, ln)
		urls = append(urls, "tcp://"+ln.Addr().String())
	}
	return urls
}

// startSim is a simulator with a fixed time per token and no jitter.
func startSim(t *testing.T, tpot time.Duration) string {
	t.Helper()
	p, _ := sim.LookupProfile("incumbent")
	p.ServedModelName = "m"
	p.PrefillBase, p.PrefillTokensPerSecond, p.PrefillSlowdownPerRunning, p.PrefillJitter = 0, 1e12, 0, 0
	p.TPOTBase, p.TPOTPerRunning, p.TokenJitter = tpot, 0, 0
	p.MaxRunning, p.MaxModelLen, p.KVCapacityTokens = 1024, 1<<24, 1<<40
	p.OutputMedianTokens, p.OutputSigma = 1e9, 0
	rn, err := sim.Listen("127.0.0.1:0", sim.Config{Profile: p, TimeScale: 1, PrefixCacheTokens: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rn.Close() })
	return "http://" + rn.Addr()
}

func block(endpoint string, conc, requests, tokens int) loadgen.Config {
	effort := "none"
	return loadgen.Config{
		Endpoint: endpoint, Model: "m", Concurrency: conc, Requests: requests, IDPrefix: "camp/block/c" + fmt.Sprint(conc) + "/r1",
		Timeout: time.Minute,
		Workload: loadgen.Workload{Corpus: corpus.KindSummary, CorpusSeed: 7, NominalContext: 256, Prefixes: corpus.PrefixUnique,
			MaxTokens: &tokens, ReasoningEffort: &effort},
	}
}

// inProcess: every agent of these tests shares one process (and its CPU figure).
var inProcess = Limits{MaxCPUShare: 1000}

func TestFleetMergesIntoOneClientsRecords(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	cfg := block(endpoint, 12, 40, 8)
	f := Fleet{Agents: startAgents(t, 3), Limits: inProcess}
	var out bytes.Buffer
	res, rep, err := f.Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := loadgen.ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	// The merged file is one client's: every index once, under the block's IDs and
	// concurrency, and the figures recomputed from it are the result's.
	var single bytes.Buffer
	if _, err := loadgen.Run(context.Background(), cfg, &single); err != nil {
		t.Fatal(err)
	}
	one, _ := loadgen.ReadRecords(&single)
	ids := func(rs []loadgen.Record) map[string]int {
		m := map[string]int{}
		for _, r := range rs {
			m[fmt.Sprintf("%s %d c%d %s", r.ID, r.Index, r.Concurrency, r.Outcome)]++
		}
		return m
	}
	a, b := ids(recs), ids(one)
	if len(recs) != 40 || len(a) != 40 || fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("merged records differ from one client's:\n%v\n%v", a, b)
	}
	if s := loadgen.Summarize(recs); s.Requests != res.Requests || s.Outcomes[loadgen.OK] != 40 || s.Concurrency != 12 {
		t.Fatalf("summary from requests.jsonl %+v, result %+v", s.Outcomes, res.Outcomes)
	}
	if res.Concurrency != 12 || res.MaxConcurrencyObserved > 12 || res.MaxConcurrencyObserved < 9 {
		t.Fatalf("concurrency %d, observed %d: want 12 across the agents", res.Concurrency, res.MaxConcurrencyObserved)
	}
	if len(rep.Agents) != 3 || rep.StartUTC == nil || !rep.StartUTC.Equal(res.Anchors.Before.UTC) {
		t.Fatalf("report %+v", rep)
	}
	planned := 0
	for k, ar := range rep.Agents {
		planned += ar.Planned
		if ar.Connections != 4 || ar.Records != ar.Planned || ar.ClockBoundMS <= 0 || ar.ClockBoundMS > rep.Limits.MaxClockBoundMS ||
			math.Abs(ar.ClockOffsetMS) > ar.ClockBoundMS+1 || ar.BlockCPUS <= 0 || ar.ScheduleLagMS.Samples != ar.Planned || ar.Failure != "" {
			t.Fatalf("agent %d: %+v", k, ar)
		}
	}
	if planned != 40 || rep.Agents[0].Planned != 14 {
		t.Fatalf("slices planned %d (first %d): want 40 split 14/13/13", planned, rep.Agents[0].Planned)
	}
}

// An open loop's arrival schedule is the block's one schedule: the merged scheduled
// times are one client's, on the authority's clock, within the clock bound.
func TestFleetOpenLoopKeepsTheSchedule(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	cfg := block(endpoint, 9, 30, 4)
	cfg.Mode, cfg.Rate, cfg.Arrival = loadgen.ModeOpen, 100, loadgen.ArrivalConstant
	f := Fleet{Agents: startAgents(t, 3), Limits: inProcess}
	var out bytes.Buffer
	_, rep, err := f.Run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatal(err)
	}
	recs, _ := loadgen.ReadRecords(&out)
	if len(recs) != 30 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		want := float64(r.Index) * 10 // 100/s, constant
		if r.ScheduledAtMS == nil || math.Abs(*r.ScheduledAtMS-want) > rep.Agents[r.Index%3].ClockBoundMS+0.01 {
			t.Fatalf("request %d scheduled at %v ms, want %v", r.Index, r.ScheduledAtMS, want)
		}
		if r.SendAtMS == nil || *r.SendAtMS < want-rep.Agents[r.Index%3].ClockBoundMS-0.01 {
			t.Fatalf("request %d sent at %v ms, before its time %v ms on the block clock", r.Index, r.SendAtMS, want)
		}
	}
}

func TestFleetRefusesBeforeSending(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	dead, _ := net.Listen("tcp", "127.0.0.1:0")
	deadURL := "tcp://" + dead.Addr().String()
	dead.Close()
	for name, tc := range map[string]struct {
		agents func([]string) []string
		limits Limits
		want   string
	}{
		"unreachable": {func(a []string) []string { return append(a[:2], deadURL) }, inProcess, "agent " + deadURL + " is unreachable"},
		"clock bound": {func(a []string) []string { return a }, Limits{MaxClockBound: time.Nanosecond, MaxCPUShare: 1000}, "clock offset cannot be bounded: ±"},
		"not a url":   {func(a []string) []string { return append(a[:2], "http://x:1") }, inProcess, `"http://x:1" is not an agent address`},
	} {
		t.Run(name, func(t *testing.T) {
			f := Fleet{Agents: tc.agents(startAgents(t, 3)), Limits: tc.limits}
			var out bytes.Buffer
			res, rep, err := f.Run(context.Background(), block(endpoint, 3, 6, 2), &out)
			var fl *Failure
			if res != nil || !errors.As(err, &fl) || !errors.Is(err, ErrAgent) || !strings.Contains(err.Error(), tc.want) || out.Len() != 0 {
				t.Fatalf("res %v, err %v, %d bytes out; want nothing sent and %q", res, err, out.Len(), tc.want)
			}
			if rep == nil || len(rep.Agents) != 3 {
				t.Fatalf("report %+v", rep)
			}
		})
	}
}

// A real agent process killed with SIGKILL mid-block: the block fails naming it,
// every record received (its own included) is kept, and its requests that sent no
// record stay in the population as cancelled.
func TestFleetAgentKilledMidBlock(t *testing.T) {
	endpoint := startSim(t, 20*time.Millisecond)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "RIGOR_TEST_AGENT=1")
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child := strings.TrimSpace(line)
	agents := append(startAgents(t, 2), child) // the child runs slice 2
	cfg := block(endpoint, 6, 60, 10)          // ten rounds of 200 ms
	killed := make(chan struct{})
	cfg.OnRecord = func(r loadgen.Record) {
		if r.Index%3 == 2 && r.Outcome == loadgen.OK {
			select {
			case <-killed:
			default:
				close(killed)
				cmd.Process.Signal(syscall.SIGKILL)
			}
		}
	}
	f := Fleet{Agents: agents, Limits: inProcess}
	var out bytes.Buffer
	res, rep, err := f.Run(context.Background(), cfg, &out)
	var fl *Failure
	if !errors.As(err, &fl) || fl.Agent != child || !strings.Contains(err.Error(), "disappeared mid-block") {
		t.Fatalf("err %v: want the killed agent %s named", err, child)
	}
	recs, _ := loadgen.ReadRecords(&out)
	if res == nil || len(recs) != 60 || res.Requests != 60 {
		t.Fatalf("%d records kept, result %v: want all 60 planned requests accounted for", len(recs), res)
	}
	var kept, lost int
	for _, r := range recs {
		if r.Index%3 != 2 {
			continue
		}
		switch {
		case r.Outcome == loadgen.OK:
			kept++
		case r.Outcome == loadgen.Cancelled && strings.Contains(r.Error, "agent "+child+" disappeared"):
			lost++
		}
	}
	if kept < 1 || kept+lost != 20 || rep.Agents[2].Records != kept || !strings.Contains(rep.Agents[2].Failure, "disappeared") {
		t.Fatalf("killed agent: %d records kept, %d cancelled, report %+v", kept, lost, rep.Agents[2])
	}
	if !res.Incomplete {
		t.Fatal("the other agents were not cancelled")
	}
}

// An agent told to stop mid-block (SIGTERM: its pod deleted) streams what it has,
// then says it stopped: the block fails with class agent naming it, never as a
// block its own bound cut.
func TestFleetAgentStoppedMidBlock(t *testing.T) {
	endpoint := startSim(t, 20*time.Millisecond)
	ctx, stopAgent := context.WithCancel(context.Background())
	t.Cleanup(stopAgent)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go (&Server{}).Serve(ctx, ln)
	stopping := "tcp://" + ln.Addr().String()
	agents := append(startAgents(t, 2), stopping) // the stopping agent runs slice 2
	cfg := block(endpoint, 6, 60, 10)
	var once sync.Once
	cfg.OnRecord = func(r loadgen.Record) {
		if r.Index%3 == 2 && r.Outcome == loadgen.OK {
			once.Do(stopAgent)
		}
	}
	var out bytes.Buffer
	res, rep, err := (&Fleet{Agents: agents, Limits: inProcess}).Run(context.Background(), cfg, &out)
	var fl *Failure
	if !errors.As(err, &fl) || fl.Agent != stopping || !strings.Contains(err.Error(), "stopped: the agent process is shutting down") || errors.Is(err, loadgen.ErrBlockBound) {
		t.Fatalf("err %v: want the stopping agent %s named, and no hard bound", err, stopping)
	}
	recs, _ := loadgen.ReadRecords(&out)
	if res == nil || len(recs) != 60 || !strings.Contains(rep.Agents[2].Failure, "shutting down") {
		t.Fatalf("%d records kept of 60, report %+v", len(recs), rep.Agents[2])
	}
}

func TestParseURL(t *testing.T) {
	for in, want := range map[string]string{
		"tcp://10.0.0.2:7070": "10.0.0.2:7070", "tcp://[::1]:1": "[::1]:1", "tcp://h:1/": "h:1",
		"http://h:1": "", "tcp://h": "", "h:1": "", "tcp://h:1/x": "", "tcp://u@h:1": "",
	} {
		got, err := ParseURL(in)
		if got != want || (err == nil) != (want != "") {
			t.Errorf("ParseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// An agent whose client saturated its CPUs or fell behind its schedule fails the
// block after it ran, naming the agent; the records stay.
func TestFleetHoldsAgentsToTheirLimits(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	for name, tc := range map[string]struct {
		limits Limits
		want   string
	}{
		"saturated": {Limits{MaxCPUShare: 1e-9}, "saturated: its client used "},
		"lagged":    {Limits{MaxCPUShare: 1000, MaxScheduleLag: time.Nanosecond}, "lagged: p99 schedule lag "},
	} {
		t.Run(name, func(t *testing.T) {
			agents := startAgents(t, 2)
			f := Fleet{Agents: agents, Limits: tc.limits}
			var out bytes.Buffer
			res, rep, err := f.Run(context.Background(), block(endpoint, 4, 8, 2), &out)
			var fl *Failure
			if res == nil || !errors.As(err, &fl) || fl.Agent != agents[0] || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v: want %q naming %s", err, tc.want, agents[0])
			}
			if recs, _ := loadgen.ReadRecords(&out); len(recs) != 8 || rep.Agents[0].Failure == "" {
				t.Fatalf("%d records kept, report %+v", len(recs), rep.Agents[0])
			}
		})
	}
}

// An agent that stays connected but sends nothing, not even a heartbeat, for the
// silence limit has disappeared as surely as one whose connection closed.
func TestFleetSilentAgentDisappears(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	silent := fakeAgent(t, func(c *conn) {
		for {
			m, err := c.read()
			if err != nil {
				return
			}
			switch m.T {
			case kindClock:
				c.send(message{T: kindClock, RecvNS: m.at.UnixNano(), SendNS: time.Now().UnixNano()})
			case kindJob:
				c.send(message{T: kindReady})
			}
			// After the start: silence, with the connection open.
		}
	})
	f := Fleet{Agents: append(startAgents(t, 1), silent), Limits: Limits{MaxCPUShare: 1000, Silence: 300 * time.Millisecond}}
	var out bytes.Buffer
	res, rep, err := f.Run(context.Background(), block(endpoint, 2, 4, 4), &out)
	var fl *Failure
	if !errors.As(err, &fl) || fl.Agent != silent || !strings.Contains(err.Error(), "disappeared mid-block: sent nothing for 300ms") {
		t.Fatalf("err %v", err)
	}
	if res == nil || res.Requests != 4 || rep.Agents[0].Records != 2 {
		t.Fatalf("result %+v, report %+v", res, rep)
	}
}

// Cancelling the authority mid-block (an interrupt) cancels every agent: each
// answers with its records, the in-flight ones cancelled, and nothing is lost.
func TestFleetCancelledMidBlock(t *testing.T) {
	endpoint := startSim(t, 20*time.Millisecond)
	cfg := block(endpoint, 6, 30, 20)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg.OnRecord = func(r loadgen.Record) { cancel() }
	f := Fleet{Agents: startAgents(t, 3), Limits: inProcess}
	var out bytes.Buffer
	res, rep, err := f.Run(ctx, cfg, &out)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrAgent) {
		t.Fatalf("err %v: want the cancellation, no agent failure", err)
	}
	recs, _ := loadgen.ReadRecords(&out)
	if res == nil || !res.Incomplete || len(recs) != 30 || res.Outcomes[loadgen.Cancelled] == 0 {
		t.Fatalf("%d records, result %+v", len(recs), res)
	}
	for _, a := range rep.Agents {
		if a.Records != a.Planned || a.Failure != "" {
			t.Fatalf("agent %+v", a)
		}
	}
}

// clockAgent is an agent ahead of the authority by skew that answers clock
// exchange n after delay(n) on the way in, then closes when it is sent its job.
// The channel reports how many exchanges it answered.
func clockAgent(t *testing.T, skew time.Duration, delay func(n int) time.Duration) (string, <-chan int) {
	exchanges := make(chan int, 1)
	addr := fakeAgent(t, func(c *conn) {
		n := 0
		for {
			m, err := c.read()
			if err != nil || m.T != kindClock {
				exchanges <- n // the job, or the authority gave up: close
				return
			}
			n++
			time.Sleep(delay(n))
			now := time.Now().Add(skew).UnixNano()
			c.send(message{T: kindClock, RecvNS: now, SendNS: now})
		}
	})
	return addr, exchanges
}

// fakeAgent listens for one authority, greets it as an agent of this protocol
// version, and hands the connection to serve; it returns the agent's address.
func fakeAgent(t *testing.T, serve func(c *conn)) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		c := newConn(nc)
		c.send(message{T: kindHello, Version: Version, CPUs: 1})
		serve(c)
	}()
	return "tcp://" + ln.Addr().String()
}

// The clock offset comes from the shortest of 16 exchanges, whichever it is: an
// agent 500 ms ahead answers 15 of them after a 30 ms delay on the way in, and
// the 11th at once. The offset, its bound and the round trip are the 11th's.
func TestFleetClockFromTheShortestOf16Exchanges(t *testing.T) {
	const skew, slow = 500 * time.Millisecond, 30 * time.Millisecond
	agent, exchanges := clockAgent(t, skew, func(n int) time.Duration {
		if n == 11 {
			return 0
		}
		return slow
	})
	f := Fleet{Agents: []string{agent}, Limits: Limits{MaxCPUShare: 1000, MaxClockBound: time.Second, Silence: 2 * time.Second}}
	_, rep, err := f.Run(context.Background(), block(startSim(t, time.Millisecond), 1, 1, 1), io.Discard)
	if err == nil {
		t.Fatal("an agent that closed instead of taking its job did not fail the block")
	}
	if n := <-exchanges; n != 16 {
		t.Errorf("%d clock exchanges, want 16", n)
	}
	a := rep.Agents[0]
	if a.RoundTripMS >= ms(slow) || a.ClockBoundMS > a.RoundTripMS/2 {
		t.Errorf("round trip %.3f ms, bound %.3f ms: not the fast exchange's (the others took over %v)", a.RoundTripMS, a.ClockBoundMS, slow)
	}
	if math.Abs(a.ClockOffsetMS-ms(skew)) > a.ClockBoundMS+0.5 {
		t.Errorf("offset %.3f ms, want %v within its bound ±%.3f ms", a.ClockOffsetMS, skew, a.ClockBoundMS)
	}
}

// By default an agent whose clock bound (half the shortest round trip) is above
// 5 ms fails before the block starts; one below it takes its job.
func TestFleetDefaultClockBoundIs5ms(t *testing.T) {
	endpoint := startSim(t, time.Millisecond)
	for _, tc := range []struct {
		delay  time.Duration
		refuse bool
	}{{14 * time.Millisecond, true}, {6 * time.Millisecond, false}} {
		agent, exchanges := clockAgent(t, 0, func(int) time.Duration { return tc.delay })
		f := Fleet{Agents: []string{agent}, Limits: Limits{MaxCPUShare: 1000, Silence: 2 * time.Second}}
		_, rep, err := f.Run(context.Background(), block(endpoint, 1, 1, 1), io.Discard)
		<-exchanges
		refused := err != nil && strings.Contains(err.Error(), "clock offset cannot be bounded: ±") && strings.Contains(err.Error(), "exceeds the limit 5ms")
		if refused != tc.refuse || rep.Limits.MaxClockBoundMS != 5 {
			t.Errorf("every exchange delayed %v: err %v (limit %v ms), want refused %v", tc.delay, err, rep.Limits.MaxClockBoundMS, tc.refuse)
		}
	}
}
