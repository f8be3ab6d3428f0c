package restore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
)

const campaign = `
campaign "restore-%[1]s" {
  frozen = ["discovery.json"]
  outage {
    budget  = "10m"
    reserve = "2m"
  }
}
host "h_%[1]s" {
  runtime = "sim"
  sim_dir = %[4]q
}
target "incumbent" {
  host       = host.h_%[1]s
  container  = "inc-%[1]s"
  profile    = "incumbent"
  endpoint   = "http://%[2]s"
  time_scale = 0.01
}
target "candidate" {
  host       = host.h_%[1]s
  container  = "cand-%[1]s"
  profile    = "flare"
  endpoint   = "http://%[2]s"
  time_scale = 0.01
}
step "deploy" "incumbent" { target = target.incumbent }
step "deploy" "candidate" {
  target  = target.candidate
  outage  = "begin"
  timeout = "1m"
}
step "restore" "incumbent" {
  target          = target.incumbent
  always          = true
  outage          = "end"
  protected_files = ["discovery.json"]
  preflight       = [["sh", "-c", %[3]q]]
  timeout         = "1m"
}
`

// apply runs the campaign and returns the restore's step_end record and receipt.
func apply(t *testing.T, name, preflight string) (engine.Record, map[string]any) {
	t.Helper()
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := os.WriteFile(filepath.Join(dir, "discovery.json"), []byte(`{"models":["m"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "campaign.hcl")
	simDir := filepath.Join(dir, "sim")
	simtest.Cleanup(t, mustOpen(t, "h_"+name, simDir))
	if err := os.WriteFile(path, []byte(fmt.Sprintf(campaign, name, addr, preflight, simDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	state := filepath.Join(dir, "state")
	if _, err := engine.Apply(context.Background(), p, steps.Registry(), engine.Options{StateDir: state, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == engine.KindStepEnd && r.Step == "restore.incumbent" {
			b, err := os.ReadFile(filepath.Join(state, r.Dir, "receipt.json"))
			if err != nil {
				t.Fatal(err)
			}
			var receipt map[string]any
			if err := json.Unmarshal(b, &receipt); err != nil {
				t.Fatal(err)
			}
			return r, receipt
		}
	}
	t.Fatal("no restore step_end")
	return engine.Record{}, nil
}

func TestRestoreRunsPreflightAgainstTheIncumbent(t *testing.T) {
	rec, receipt := apply(t, "ok", `curl -fsS "$RIGOR_ENDPOINT/v1/models" 2>/dev/null || wget -qO- "$RIGOR_ENDPOINT/v1/models" || test -n "$RIGOR_ENDPOINT"`)
	if rec.Status != engine.StatusSucceeded {
		t.Fatalf("restore %s: %s", rec.Status, rec.Message)
	}
	if receipt["outcome"] != "restored" || receipt["action"] != "restarted-by-id" {
		t.Fatalf("receipt outcome %v action %v", receipt["outcome"], receipt["action"])
	}
	checks, _ := json.Marshal(receipt["checks"])
	for _, want := range []string{`"preflight"`, `"image identity"`} {
		if !strings.Contains(string(checks), want) {
			t.Errorf("receipt checks lack %s: %s", want, checks)
		}
	}
	// The protected file is either compared with the digest the engine pinned, or
	// stated as not compared; never claimed checked without a pin.
	skipped, _ := json.Marshal(receipt["not_compared"])
	compared := strings.Contains(string(checks), `discovery.json sha256`)
	firstSeen := strings.Contains(string(skipped), `discovery.json sha256`) && strings.Contains(string(skipped), "first seen at restore, nothing to compare")
	if compared == firstSeen {
		t.Errorf("discovery.json must be in exactly one of checks (%s) and not_compared (%s)", checks, skipped)
	}
}

func TestFailingPreflightFailsRestoreAndKeepsOutput(t *testing.T) {
	rec, receipt := apply(t, "bad", `echo "routed preflight: 401"; exit 3`)
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassHealth || !strings.Contains(rec.Message, "preflight") {
		t.Fatalf("restore %s/%s: %s; want failed/health naming the preflight", rec.Status, rec.Class, rec.Message)
	}
	if receipt["outcome"] != "failed" {
		t.Fatalf("receipt outcome %v", receipt["outcome"])
	}
	found := false
	for _, a := range rec.Artefacts {
		if strings.HasSuffix(a.Path, "preflight-1.txt") {
			found = true
		}
	}
	if !found {
		t.Fatalf("preflight output not kept as an artefact: %+v", rec.Artefacts)
	}
}

func mustOpen(t *testing.T, name, dir string) *sim.Host {
	h, err := sim.OpenHost(name, dir)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
