package restore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/child"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// preflightTimeout bounds each preflight command: restore runs inside the reserve.
const preflightTimeout = 2 * time.Minute

// verifyRestored runs the checks that come after the incumbent answers health, the
// same on every runtime: protected files re-hashed, then the declared preflight.
func verifyRestored(ctx context.Context, sc *engine.StepContext, t target.Target, check checkFunc) *engine.Result {
	for _, f := range (Step{}).Files(sc.Config) {
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(sc.BaseDir, p)
		}
		sum, err := plans.FileSHA256(p)
		if !check("protected file", err == nil, "%s sha256 %s (the engine compared it with the frozen hash before restore)", f, sum) {
			r := engine.Failed(engine.ClassFrozenInputChanged, "protected file %s cannot be read: %v", f, err)
			return &r
		}
	}
	for i, argv := range preflightCommands(sc.Config) {
		name := fmt.Sprintf("preflight-%d.txt", i+1)
		if err := runPreflight(ctx, sc, t, argv, sc.Path(name)); err != nil {
			check("preflight", false, "%q: %v (output in %s)", argv, err, name)
			r := engine.Failed(engine.ClassHealth, "preflight %q failed on the restored %s: %v", argv, t.Name, err)
			return &r
		}
		check("preflight", true, "%q passed (output in %s)", argv, name)
	}
	return nil
}

// preflightCommands reads preflight = [["cmd", "arg"], ...] from the step, falling
// back to the target's preflight attribute.
func preflightCommands(cfg cty.Value) [][]string {
	v := cfg.GetAttr("preflight")
	if v.IsNull() {
		if tv := cfg.GetAttr("target"); tv.Type().IsObjectType() && tv.Type().HasAttribute("preflight") {
			v = tv.GetAttr("preflight")
		}
	}
	if v.IsNull() || !v.IsKnown() || !v.CanIterateElements() {
		return nil
	}
	var out [][]string
	for it := v.ElementIterator(); it.Next(); {
		_, cmd := it.Element()
		if !cmd.CanIterateElements() {
			continue
		}
		var argv []string
		for ai := cmd.ElementIterator(); ai.Next(); {
			_, a := ai.Element()
			if a.Type() == cty.String && !a.IsNull() {
				argv = append(argv, a.AsString())
			}
		}
		if len(argv) > 0 {
			out = append(out, argv)
		}
	}
	return out
}

// runPreflight runs one command from the campaign directory with the target in its
// environment (RIGOR_ENDPOINT, RIGOR_MODEL, RIGOR_TARGET, and RIGOR_API_KEY when the
// target declares api_key) and nothing else of rigor's but steps/internal/child's
// Inherited variables, keeping its combined output, secrets redacted, as evidence.
func runPreflight(ctx context.Context, sc *engine.StepContext, t target.Target, argv []string, outPath string) error {
	ctx, cancel := context.WithTimeout(ctx, preflightTimeout)
	defer cancel()
	cmd := osexec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sc.BaseDir
	env := []string{"RIGOR_ENDPOINT=" + t.Endpoint, "RIGOR_MODEL=" + t.Model, "RIGOR_TARGET=" + t.Name}
	if t.APIKey != "" {
		env = append(env, "RIGOR_API_KEY="+t.APIKey)
	}
	cmd.Env = child.Env(env...)
	var out bytes.Buffer
	w := engine.NewRedactor(sc.Secrets...).Stream(&out)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	_ = w.Close()
	_ = os.WriteFile(outPath, out.Bytes(), 0o644)
	return err
}
