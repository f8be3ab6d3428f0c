package restore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
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
// same on every runtime: every protected file (the target's and the step's) hashed
// and compared with the digest the engine pinned first (sc.Pinned), then the
// declared preflight. A file with no pinned digest is recorded as first seen, never
// as checked. A changed or unreadable protected file fails the restore with class
// frozen_input_changed, naming the file and both digests; the preflight still runs
// first, so the receipt says everything that holds.
func verifyRestored(ctx context.Context, sc *engine.StepContext, t target.Target, rc *Receipt, check checkFunc) *engine.Result {
	var broken []string
	for _, f := range (Step{}).Files(sc.Config) {
		sum, err := plans.FileSHA256(target.FilePath(sc.BaseDir, f))
		pinned, ok := sc.Pinned[target.PinName(sc.BaseDir, f)]
		switch {
		case err != nil:
			check("protected file", false, "%s cannot be read: %v", f, err)
			broken = append(broken, fmt.Sprintf("%s cannot be read: %v", f, err))
		case !ok:
			rc.NotCompared = append(rc.NotCompared, Unchecked{Name: "protected file",
				Detail: fmt.Sprintf("%s sha256 %s: first seen at restore, nothing to compare", f, sum)})
		case pinned == sum:
			check("protected file", true, "%s sha256 %s, the digest pinned when it was first seen", f, sum)
		default:
			check("protected file", false, "%s changed: pinned sha256 %s, now %s", f, pinned, sum)
			broken = append(broken, fmt.Sprintf("%s changed (pinned sha256 %s, now %s)", f, pinned, sum))
		}
	}
	var preflightErr error
	for i, argv := range preflightCommands(sc.Config) {
		name := fmt.Sprintf("preflight-%d.txt", i+1)
		if err := runPreflight(ctx, sc, t, argv, sc.Path(name)); err != nil {
			check("preflight", false, "%q: %v (output in %s)", argv, err, name)
			preflightErr = fmt.Errorf("preflight %q failed on the restored %s: %v", argv, t.Name, err)
			break
		}
		check("preflight", true, "%q passed (output in %s)", argv, name)
	}
	switch {
	case len(broken) > 0:
		msg := fmt.Sprintf("restored %s, but its protected files did not hold: %s", t.Name, strings.Join(broken, "; "))
		if preflightErr != nil {
			msg += "; and " + preflightErr.Error()
		}
		r := engine.Failed(engine.ClassFrozenInputChanged, "%s", msg)
		return &r
	case preflightErr != nil:
		r := engine.Failed(engine.ClassHealth, "%v", preflightErr)
		return &r
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
	env := []string{"RIGOR_ENDPOINT=" + t.Endpoint, "RIGOR_MODEL=" + t.ServedModel(), "RIGOR_TARGET=" + t.Name}
	if t.APIKey != "" {
		env = append(env, "RIGOR_API_KEY="+t.APIKey)
	}
	cmd := child.Command(ctx, argv, env...)
	cmd.Dir = sc.BaseDir
	var out bytes.Buffer
	w := engine.NewRedactor(sc.Secrets...).Stream(&out)
	cmd.Stdout, cmd.Stderr = w, w
	err := cmd.Run()
	_ = w.Close()
	_ = os.WriteFile(outPath, out.Bytes(), 0o644)
	return err
}
