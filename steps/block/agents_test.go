package block_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/rigor-bench/rigor/steps/block"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/agent"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/sim"
)

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
		go (&agent.Server{}).Serve(ctx, ln)
		urls = append(urls, "tcp://"+ln.Addr().String())
	}
	return urls
}

// vanishingAgent speaks the protocol up to the start and then drops its connection:
// an agent host that disappears mid-block.
func vanishingAgent(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				fmt.Fprintf(c, `{"t":"hello","version":%d,"cpus":1}`+"\n", agent.Version)
				sc := bufio.NewScanner(c)
				sc.Buffer(nil, 1<<24)
				for sc.Scan() {
					var m struct{ T string }
					json.Unmarshal(sc.Bytes(), &m)
					switch m.T {
					case "clock":
						now := time.Now().UnixNano()
						fmt.Fprintf(c, `{"t":"clock","recv_ns":%d,"send_ns":%d}`+"\n", now, now)
					case "job":
						fmt.Fprintln(c, `{"t":"ready"}`)
					case "start":
						return
					}
				}
			}()
		}
	}()
	return "tcp://" + ln.Addr().String()
}

// A block driven by three agents writes one client's evidence, with what each agent
// did in result.json.
func TestBlockWithAgents(t *testing.T) {
	t.Cleanup(block.SetInProcessAgents())
	rn := startSim(t, sim.Config{TimeScale: 0.05})
	agents := startAgents(t, 3)
	run := runSimBlock(t, rn, blockOpts{concurrency: 6, requests: 18, agents: agents})
	if run.res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", run.res.Status, run.res.Class, run.res.Message)
	}
	checkEvidence(t, run, 18)
	var rj struct{ Agents agent.Report }
	b, _ := os.ReadFile(filepath.Join(run.dir, "result.json"))
	if err := json.Unmarshal(b, &rj); err != nil {
		t.Fatal(err)
	}
	if len(rj.Agents.Agents) != 3 || rj.Agents.StartUTC == nil {
		t.Fatalf("result.json agents: %s", b)
	}
	for k, a := range rj.Agents.Agents {
		if a.Agent != agents[k] || a.Planned != 6 || a.Records != 6 || a.Connections != 2 || a.ClockBoundMS <= 0 || a.BlockCPUS <= 0 {
			t.Fatalf("agent %d: %+v", k, a)
		}
	}
	seen := map[int]bool{}
	for _, r := range run.records {
		if r.Concurrency != 6 || r.Outcome != loadgen.OK || seen[r.Index] {
			t.Fatalf("record %+v", r)
		}
		seen[r.Index] = true
	}
}

// An agent that disappears mid-block stops the campaign (class agent) naming it,
// and every record received is kept.
func TestBlockAgentDisappears(t *testing.T) {
	t.Cleanup(block.SetInProcessAgents())
	rn := startSim(t, sim.Config{TimeScale: 0.05})
	gone := vanishingAgent(t)
	run := runSimBlock(t, rn, blockOpts{concurrency: 4, requests: 16, maxTokens: 64, agents: append(startAgents(t, 1), gone)})
	if run.res.Class != engine.ClassAgent || !strings.Contains(run.res.Message, "agent "+gone+" disappeared mid-block") ||
		!strings.Contains(run.res.Message, "every record received is kept") {
		t.Fatalf("%s (%s): %s", run.res.Status, run.res.Class, run.res.Message)
	}
	if engine.DefaultPolicy(run.res.Class, true) != engine.PolicyStopCampaign {
		t.Fatal("an agent failure does not stop the campaign")
	}
	checkEvidence(t, run, 16)
	var lost int
	for _, r := range run.records {
		if r.Index%2 == 1 && r.Outcome == loadgen.Cancelled && strings.Contains(r.Error, gone) {
			lost++
		}
	}
	if lost != 8 {
		t.Fatalf("%d of the vanished agent's 8 requests accounted for as cancelled", lost)
	}
}
