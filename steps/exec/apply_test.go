package exec_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/rs/zerolog"
)

// TestSecretNeverReachesEvidence applies a campaign whose exec step is given a
// sensitive API key through env and prints it, records its environment and fails
// quoting it: nothing in the state directory (journal, plan, artefacts) holds the
// key, and the places that quoted it say "(sensitive)".
func TestSecretNeverReachesEvidence(t *testing.T) {
	const secret = "sk-apply-9f8e7d6c5b4a"
	t.Setenv(plans.EnvPrefix+"api_key", secret) // rigor's environment holds it too
	dir := t.TempDir()
	campaign := fmt.Sprintf(`campaign "secrets" {}
variable "api_key" {
  sensitive = true
}
step "exec" "leaky" {
  command = [%q]
  env     = { RIGOR_EXEC_HELPER = "1", API_KEY = var.api_key, EXIT_CODE = "3" }
}
`, os.Args[0])
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(campaign), 0o644); err != nil {
		t.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: steps.Registry().Types()})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	state := filepath.Join(dir, "state")
	if _, err := engine.Apply(context.Background(), p, steps.Registry(), engine.Options{StateDir: state, Log: zerolog.Nop()}); err != nil {
		t.Fatal(err)
	}
	recs, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	var end *engine.Record
	for i, r := range recs {
		if r.Kind == engine.KindStepEnd && r.Step == "exec.leaky" {
			end = &recs[i]
		}
	}
	if end == nil || end.Status != engine.StatusFailed || !strings.Contains(end.Message, "auth failed for (sensitive)") {
		t.Fatalf("step_end %+v: want a failure quoting the redacted stderr", end)
	}
	stdout, err := os.ReadFile(filepath.Join(state, end.Dir, "stdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(stdout), "key=(sensitive)") || strings.Contains(string(stdout), plans.EnvPrefix) {
		t.Errorf("stdout.txt: %s", stdout)
	}
	files := 0
	err = filepath.WalkDir(state, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s holds the secret:\n%s", path, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 {
		t.Fatalf("only %d files in the state directory; the walk checked nothing", files)
	}
}
