package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/child"
	"github.com/zclconf/go-cty/cty"
)

// Step runs a command.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.FileInputs = Step{}
var _ engine.DefaultTimeout = Step{}
var _ plans.PublicArguments = Step{}

var spec = hcldec.ObjectSpec{
	"command":       &hcldec.AttrSpec{Name: "command", Type: cty.List(cty.String), Required: true},
	"env":           &hcldec.AttrSpec{Name: "env", Type: cty.Map(cty.String)},
	"dir":           &hcldec.AttrSpec{Name: "dir", Type: cty.String},
	"inputs":        &hcldec.AttrSpec{Name: "inputs", Type: cty.List(cty.String)},
	"failure_class": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "failure_class", Type: cty.String}, Func: plans.OneOf("failure_class", engine.FailureClasses())},
}

var outputType = cty.Object(map[string]cty.Type{
	"exit_code":     cty.Number,
	"stdout_sha256": cty.String,
})

// PublicArguments refuses secrets on the command line and in names of files and
// directories, which the journal and every user of the host can read.
func (Step) PublicArguments() map[string]string {
	cmd := "A command line is visible to every user of the host (ps, /proc). Pass secrets to the command through env instead, e.g. env = { API_KEY = var.api_key }, and read $API_KEY in the command."
	return map[string]string{
		"command": cmd,
		"dir":     "The working directory is a path in the journal's inputs and in the process list.",
		"inputs":  "Input paths are listed in the journal's inputs.",
	}
}

// Spec is the schema of an exec step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType is the exit code and the hash of stdout.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds commands that declare no timeout.
func (Step) DefaultTimeout() time.Duration { return 10 * time.Minute }

// Files are the declared inputs: their content is part of the step's input hash.
func (Step) Files(cfg cty.Value) []string {
	v := cfg.GetAttr("inputs")
	if v.IsNull() || !v.IsKnown() {
		return nil
	}
	var out []string
	for _, e := range v.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// Run executes the command and keeps its output as evidence.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	cfg := sc.Config
	var argv []string
	for _, e := range cfg.GetAttr("command").AsValueSlice() {
		argv = append(argv, e.AsString())
	}
	if len(argv) == 0 {
		return engine.Failed(engine.ClassConfig, "command is empty")
	}
	class := engine.ClassExec
	if v := cfg.GetAttr("failure_class"); !v.IsNull() {
		class = engine.FailureClass(v.AsString())
	}
	dir := sc.BaseDir
	if v := cfg.GetAttr("dir"); !v.IsNull() {
		dir = v.AsString()
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(sc.BaseDir, dir)
		}
	}
	env, err := child.Declared(cfg.GetAttr("env"))
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	cmd := child.Command(ctx, argv, env...)
	cmd.Dir = dir
	stdout, err := os.Create(sc.Path("stdout.txt"))
	if err != nil {
		return engine.Failed(engine.ClassEvidenceWrite, "create stdout artefact: %v", err)
	}
	defer stdout.Close()
	stderr, err := os.Create(sc.Path("stderr.txt"))
	if err != nil {
		return engine.Failed(engine.ClassEvidenceWrite, "create stderr artefact: %v", err)
	}
	defer stderr.Close()
	// The output is evidence: a secret the command was given through env and
	// printed is redacted before it reaches the files.
	redact := engine.NewRedactor(sc.Secrets...)
	outW, errW := redact.Stream(stdout), redact.Stream(stderr)
	cmd.Stdout, cmd.Stderr = outW, errW
	runErr := cmd.Run()
	if err := errors.Join(outW.Close(), errW.Close(), stdout.Sync(), stderr.Sync()); err != nil {
		return engine.Failed(engine.ClassEvidenceWrite, "keep the output of %q: %v", argv[0], err)
	}
	sum, _ := fileSHA256(sc.Path("stdout.txt"))
	code := 0
	var exitErr *osexec.ExitError
	switch {
	case runErr == nil:
	case ctx.Err() != nil && !errors.Is(runErr, child.ErrBound):
		// An interrupt: the engine records the step as interrupted, not as a
		// failure of the command.
		return engine.Result{Status: engine.StatusFailed, Message: fmt.Sprintf("command %q stopped: %v", argv[0], ctx.Err())}
	case errors.Is(runErr, child.ErrBound):
		return engine.Failed(engine.ClassTimeout, "command %q had not finished as the step's hard bound neared: it was killed with everything it started, just before the bound, so that the step returns by it (output kept in stdout.txt and stderr.txt)", argv[0])
	case errors.As(runErr, &exitErr):
		code = exitErr.ExitCode()
	case errors.Is(runErr, osexec.ErrNotFound) || errors.Is(runErr, os.ErrNotExist):
		return engine.Failed(engine.ClassToolMissing, "command %q not found: %v", argv[0], runErr)
	default:
		return sc.Redacted(engine.Failed(class, "command %q could not run: %v", argv[0], runErr))
	}
	out := cty.ObjectVal(map[string]cty.Value{"exit_code": cty.NumberIntVal(int64(code)), "stdout_sha256": cty.StringVal(sum)})
	if code != 0 {
		return engine.FailedWith(class, out, "command %q exited with status %d: %s (stderr kept in stderr.txt)", argv[0], code, lastLine(sc.Path("stderr.txt")))
	}
	return engine.Succeeded(out)
}

// lastLine is the last non-empty line of a kept output file, shortened, for the
// failure message. The file is already redacted, so the message is too.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "stderr unreadable"
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 4096 {
		_, _ = f.Seek(-4096, io.SeekEnd)
	}
	b, _ := io.ReadAll(f)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if last == "" {
		return "no stderr"
	}
	if r := []rune(last); len(r) > 200 {
		last = string(r[:200]) + "…"
	}
	return last
}
