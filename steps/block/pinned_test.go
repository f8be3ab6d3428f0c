package block_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
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

// applied is a campaign applied through the engine: the last step_start and
// step_end of every step, and the state directory.
type applied struct {
	state  string
	starts map[string]engine.Record
	ends   map[string]engine.Record
}

// applyOnSim writes src (a format string whose %[1]q is the sim host's directory and
// %[2]s a free loopback address) into a campaign directory beside files, applies it
// with every registered step type, and reads the journal back.
func applyOnSim(t *testing.T, src string, files map[string]string) applied {
	t.Helper()
	dir := t.TempDir()
	simDir := filepath.Join(dir, "sim")
	h, err := sim.OpenHost("node", simDir)
	if err != nil {
		t.Fatal(err)
	}
	simtest.Cleanup(t, h)
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(src, simDir, freeAddrOf())), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types()})
	if diags.HasErrors() {
		t.Fatalf("load: %v", diags)
	}
	a := applied{state: filepath.Join(dir, "state"), starts: map[string]engine.Record{}, ends: map[string]engine.Record{}}
	if _, err := engine.Apply(context.Background(), p, steps.Registry(), engine.Options{StateDir: a.state, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(a.state, engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r engine.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case engine.KindStepStart:
			a.starts[r.Step] = r
		case engine.KindStepEnd:
			a.ends[r.Step] = r
		}
	}
	return a
}

// attemptFile is the path of a file in the latest attempt of a step.
func (a applied) attemptFile(step, name string) string {
	return filepath.Join(a.state, filepath.FromSlash(a.starts[step].Dir), name)
}

const pinnedHost = `
host "node" {
  runtime = "sim"
  sim_dir = %[1]q
}
`

// A target's protected file edited between two blocks stops the second block as
// frozen_input_changed before it sends anything: no deploy, identity or restore
// runs between them, so only the block's own pinned inputs can see the edit.
func TestProtectedFileEditedBetweenBlocks(t *testing.T) {
	a := applyOnSim(t, `campaign "protected" {}`+pinnedHost+`
target "incumbent" {
  host            = host.node
  container       = "inc"
  profile         = "incumbent"
  endpoint        = "http://%[2]s"
  time_scale      = 0.002
  protected_files = ["discovery.json"]
}
workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 1
  nominal_context = 512
  max_tokens      = 64
}
step "deploy" "incumbent" {
  target  = target.incumbent
  timeout = "30s"
}
step "block" "a" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  depends_on  = [step.deploy.incumbent]
}
step "exec" "edit" {
  command    = ["sh", "-c", "echo edited >> discovery.json"]
  depends_on = [step.block.a]
}
step "block" "b" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  depends_on  = [step.exec.edit]
}
`, map[string]string{"discovery.json": `{"models":["m"]}`})
	if e := a.ends["block.a"]; e.Status != engine.StatusSucceeded {
		t.Fatalf("block.a: %s %s", e.Status, e.Message)
	}
	if _, err := os.Stat(a.attemptFile("block.a", "requests.jsonl")); err != nil {
		t.Fatalf("block.a sent nothing: %v", err)
	}
	if a.starts["block.a"].Pinned["file discovery.json"] == "" {
		t.Errorf("block.a's step_start pinned %v, want the protected file among them", a.starts["block.a"].Pinned)
	}
	b := a.ends["block.b"]
	if b.Status != engine.StatusFailed || b.Class != engine.ClassFrozenInputChanged ||
		!strings.Contains(b.Message, "file discovery.json: pinned ") || !strings.Contains(b.Message, "checked before anything was sent") {
		t.Fatalf("block.b: %s (%s) %s; want failed (frozen_input_changed) naming file discovery.json", b.Status, b.Class, b.Message)
	}
	if _, err := os.Stat(a.attemptFile("block.b", "requests.jsonl")); !os.IsNotExist(err) {
		t.Errorf("block.b wrote requests.jsonl (%v); the check must come before any request", err)
	}
}

// Two matrices give one workload's c1 cell two corpus seeds: each sends its own
// corpus under its own pin, and neither is held to the other's digest. Within a
// matrix the arms still share one pin.
func TestTwoMatricesOneWorkloadTwoSeeds(t *testing.T) {
	a := applyOnSim(t, `campaign "seeds" {}`+pinnedHost+`
target "incumbent" {
  host       = host.node
  container  = "inc"
  profile    = "incumbent"
  endpoint   = "http://%[2]s"
  time_scale = 0.002
}
workload "w" {
  corpus          = "synthetic-summary"
  corpus_seed     = 1
  nominal_context = 512
  max_tokens      = 64
}
step "deploy" "incumbent" {
  target  = target.incumbent
  timeout = "30s"
}
matrix "first" {
  workload    = workload.w
  corpus_seed = { c1 = 11 }
  concurrency = [1]
  repetitions = 1
  requests    = 2
  arm "a" {
    target = target.incumbent
    setup  = [step.deploy.incumbent]
  }
  arm "b" {
    target = target.incumbent
  }
}
matrix "second" {
  workload    = workload.w
  corpus_seed = { c1 = 22 }
  concurrency = [1]
  repetitions = 1
  requests    = 2
  arm "a" {
    target = target.incumbent
  }
}
`, nil)
	type corpusOf struct {
		Corpus struct{ Key, SHA256 string }
	}
	read := func(step string) corpusOf {
		t.Helper()
		if e := a.ends[step]; e.Status != engine.StatusSucceeded {
			t.Fatalf("%s: %s (%s) %s", step, e.Status, e.Class, e.Message)
		}
		b, err := os.ReadFile(a.attemptFile(step, "result.json"))
		if err != nil {
			t.Fatal(err)
		}
		var c corpusOf
		if err := json.Unmarshal(b, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	firstA, firstB := read(`block.first["a/c1/r1"]`), read(`block.first["b/c1/r1"]`)
	second := read(`block.second["a/c1/r1"]`)
	if firstA.Corpus.Key != "corpus workload.w s11 c1 main" || second.Corpus.Key != "corpus workload.w s22 c1 main" {
		t.Errorf("keys %q and %q, want the seed in each", firstA.Corpus.Key, second.Corpus.Key)
	}
	if firstA.Corpus != firstB.Corpus {
		t.Errorf("arms of one cell sent %+v and %+v", firstA.Corpus, firstB.Corpus)
	}
	if firstA.Corpus.SHA256 == second.Corpus.SHA256 {
		t.Error("two seeds rendered one corpus")
	}
}
