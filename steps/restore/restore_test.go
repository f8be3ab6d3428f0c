package restore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
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

// edited is a campaign whose target protects discovery.json (not in campaign.frozen):
// the engine pins it when the incumbent is deployed, and an exec step edits it while
// the candidate serves.
const edited = `
campaign "restore-%[1]s" {
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
  host            = host.h_%[1]s
  container       = "inc-%[1]s"
  profile         = "incumbent"
  endpoint        = "http://%[2]s"
  time_scale      = 0.01
  protected_files = ["discovery.json"]
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
  target     = target.candidate
  outage     = "begin"
  timeout    = "1m"
  depends_on = [step.deploy.incumbent]
}
step "exec" "edit" {
  command    = ["sh", "-c", "echo edited >> discovery.json"]
  timeout    = "30s"
  depends_on = [step.deploy.candidate]
}
step "restore" "incumbent" {
  target     = target.incumbent
  always     = true
  outage     = "end"
  preflight  = [["sh", "-c", %[3]q]]
  timeout    = "1m"
  depends_on = [step.exec.edit]
}
`

// apply runs the campaign src (campaign or edited) and returns the restore's
// step_end record and receipt.
func apply(t *testing.T, src, name, preflight string) (engine.Record, map[string]any) {
	t.Helper()
	rec, receipt, _ := applyWith(t, src, name, preflight, nil)
	return rec, receipt
}

// applyWith runs a campaign template with the given RIGOR_VAR_ environment and also
// returns the state directory.
func applyWith(t *testing.T, src, name, preflight string, env []string) (engine.Record, map[string]any, string) {
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
	if err := os.WriteFile(path, []byte(fmt.Sprintf(src, name, addr, preflight, simDir)), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types(), Env: append([]string{}, env...)})
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
			return r, receipt, state
		}
	}
	t.Fatal("no restore step_end")
	return engine.Record{}, nil, ""
}

func TestRestoreRunsPreflightAgainstTheIncumbent(t *testing.T) {
	rec, receipt := apply(t, campaign, "ok", `curl -fsS "$RIGOR_ENDPOINT/v1/models" 2>/dev/null || wget -qO- "$RIGOR_ENDPOINT/v1/models" || test -n "$RIGOR_ENDPOINT"`)
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
	// The protected file is in campaign.frozen, so the engine pinned it at freeze and
	// restore compared it with that pin.
	if !strings.Contains(string(checks), `discovery.json sha256`) || !strings.Contains(string(checks), "the digest pinned when it was first seen") {
		t.Errorf("receipt checks do not compare discovery.json with its pin: %s", checks)
	}
	if receipt["not_compared"] != nil {
		t.Errorf("a pinned file reported as not compared: %v", receipt["not_compared"])
	}
}

// A protected file of the target, pinned when the incumbent was deployed and edited
// while the candidate served, fails the restore's verification naming the file and
// both digests; the incumbent is back all the same.
func TestEditedProtectedFileFailsRestore(t *testing.T) {
	rec, receipt := apply(t, edited, "edited", `true`)
	if rec.Status != engine.StatusFailed || rec.Class != engine.ClassFrozenInputChanged {
		t.Fatalf("restore %s/%s: %s; want failed/frozen_input_changed", rec.Status, rec.Class, rec.Message)
	}
	if !regexp.MustCompile(`discovery\.json changed \(pinned sha256 [0-9a-f]{64}, now [0-9a-f]{64}\)`).MatchString(rec.Message) {
		t.Errorf("message does not name the file and both digests: %s", rec.Message)
	}
	t.Logf("restore: %s", rec.Message)
	if receipt["outcome"] != "failed" {
		t.Errorf("receipt outcome %v", receipt["outcome"])
	}
	checks, _ := json.Marshal(receipt["checks"])
	for _, want := range []string{`"health"`, `"preflight"`, `discovery.json changed: pinned sha256`} {
		if !strings.Contains(string(checks), want) {
			t.Errorf("receipt checks lack %s: %s", want, checks)
		}
	}
}

func TestFailingPreflightFailsRestoreAndKeepsOutput(t *testing.T) {
	rec, receipt := apply(t, campaign, "bad", `echo "routed preflight: 401"; exit 3`)
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

// TestPreflightGetsTheTargetKeyAndNothingElse gives the incumbent a sensitive
// api_key: the preflight reads it as RIGOR_API_KEY, sees none of rigor's own
// environment, and its kept output has the key redacted.
func TestPreflightGetsTheTargetKeyAndNothingElse(t *testing.T) {
	const secret = "sk-restore-0123456789"
	t.Setenv(plans.EnvPrefix+"api_key", secret)
	withKey := strings.Replace(campaign, `target "incumbent" {`, `variable "api_key" {
  sensitive = true
}
target "incumbent" {
  api_key    = var.api_key`, 1)
	rec, _, state := applyWith(t, withKey, "key", `test "$RIGOR_API_KEY" = "`+secret+`" && echo "authorized with $RIGOR_API_KEY" && env`,
		[]string{plans.EnvPrefix + "api_key=" + secret})
	if rec.Status != engine.StatusSucceeded {
		t.Fatalf("restore %s/%s: %s; the preflight did not get RIGOR_API_KEY", rec.Status, rec.Class, rec.Message)
	}
	out, err := os.ReadFile(filepath.Join(state, rec.Dir, "preflight-1.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "authorized with (sensitive)") || strings.Contains(string(out), secret) {
		t.Errorf("preflight output not redacted:\n%s", out)
	}
	if strings.Contains(string(out), plans.EnvPrefix) {
		t.Errorf("rigor's environment reached the preflight:\n%s", out)
	}
	// What the README says a preflight is given about the target it checks.
	prof, _ := sim.LookupProfile("incumbent")
	for _, want := range []string{`(?m)^RIGOR_TARGET=incumbent$`, `(?m)^RIGOR_MODEL=` + regexp.QuoteMeta(prof.ServedModelName) + `$`, `(?m)^RIGOR_ENDPOINT=http://127\.0\.0\.1:[0-9]+$`} {
		if !regexp.MustCompile(want).Match(out) {
			t.Errorf("the preflight's environment lacks %s:\n%s", want, out)
		}
	}
}
