package nsys

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/child"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// Step runs one Nsight Systems capture.
type Step struct{}

var _ engine.Step = Step{}
var _ engine.DefaultTimeout = Step{}
var _ plans.PublicArguments = Step{}

var spec = hcldec.ObjectSpec{
	"target":    &hcldec.AttrSpec{Name: "target", Type: cty.DynamicPseudoType},
	"where":     &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "where", Type: cty.String}, Func: plans.OneOf("where", wheres)},
	"container": &hcldec.AttrSpec{Name: "container", Type: cty.String},         // default: the target's container
	"command":   &hcldec.AttrSpec{Name: "command", Type: cty.List(cty.String)}, // required unless where = "simulator"
	"duration":  &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "duration", Type: cty.String, Required: true}, Func: plans.PositiveDuration("duration", 0, "20s")},
	"output":    &hcldec.AttrSpec{Name: "output", Type: cty.String},
	"args":      &hcldec.AttrSpec{Name: "args", Type: cty.List(cty.String)}, // extra `nsys profile` options
	"nsys":      &hcldec.AttrSpec{Name: "nsys", Type: cty.String},           // the nsys binary (default "nsys")
	"docker":    &hcldec.AttrSpec{Name: "docker", Type: cty.String},         // the docker CLI (default "docker")
	"env":       &hcldec.AttrSpec{Name: "env", Type: cty.Map(cty.String)},
	// The report's mapping and comparison (analyze.go, steps/report): kernel-name
	// patterns per module, the CUDA device of each rank, and the unprofiled control
	// block of the profiled one.
	"modules":      &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "modules", Type: cty.Map(cty.List(cty.String))}, Func: validateModules},
	"rank_devices": &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "rank_devices", Type: cty.List(cty.Number)}, Func: validateRankDevices},
	"control":      &hcldec.ValidateSpec{Wrapped: &hcldec.AttrSpec{Name: "control", Type: cty.DynamicPseudoType}, Func: validateControl},
}

// wheres are where a capture runs: nsys on the host, nsys inside the target's
// container, or the simulator profiling itself.
var wheres = []string{"host", "container", "simulator"}

var outputType = cty.Object(map[string]cty.Type{
	"report":     cty.String,
	"sqlite":     cty.String,
	"warnings":   cty.Number,
	"duration_s": cty.Number,
})

// PublicArguments refuses secrets in what becomes the argv of nsys or docker: the
// process list shows it and capture.json keeps it.
func (Step) PublicArguments() map[string]string {
	argv := "It is part of the nsys (or docker exec) command line, which every user of the host can see and capture.json keeps. Pass secrets through env instead, e.g. env = { API_KEY = var.api_key }."
	return map[string]string{"command": argv, "args": argv, "container": argv, "nsys": argv, "docker": argv, "output": argv}
}

// DataReferences says target names a target block, so plan validate refuses a
// string or another kind of block there.
func (Step) DataReferences() map[string]plans.DataRef {
	return map[string]plans.DataRef{"target": {Kind: "target"}}
}

// Spec is the schema of an nsys step body.
func (Step) Spec() hcldec.ObjectSpec { return spec }

// OutputType names the kept files.
func (Step) OutputType() cty.Type { return outputType }

// DefaultTimeout bounds a capture plus its export.
func (Step) DefaultTimeout() time.Duration { return 15 * time.Minute }

// containerDir is where a capture inside a container writes before it is copied out.
const containerDir = "/tmp/rigor-nsys"

type plan struct {
	where     string
	container string
	nsys      string
	docker    string
	dockerEnv string
	command   []string
	args      []string
	duration  time.Duration
	output    string
	env       []string // declared env, and DOCKER_HOST for the docker CLI
	envKeys   []string // the names of the declared env, passed on by docker exec
	target    *target.Target
}

func readPlan(sc *engine.StepContext) (plan, error) {
	cfg := sc.Config
	p := plan{where: target.Str(cfg, "where"), container: target.Str(cfg, "container"), nsys: target.Str(cfg, "nsys"),
		docker: target.Str(cfg, "docker"), output: target.Str(cfg, "output")}
	if v := cfg.GetAttr("command"); !v.IsNull() {
		for _, x := range v.AsValueSlice() {
			p.command = append(p.command, x.AsString())
		}
	}
	if v := cfg.GetAttr("args"); !v.IsNull() {
		for _, a := range v.AsValueSlice() {
			p.args = append(p.args, a.AsString())
		}
	}
	d, err := time.ParseDuration(target.Str(cfg, "duration"))
	if err != nil || d <= 0 {
		return p, fmt.Errorf("duration = %q: want a duration such as \"20s\"", target.Str(cfg, "duration"))
	}
	p.duration = d
	if p.output == "" {
		p.output = "profile"
	}
	if strings.ContainsAny(p.output, `/\`) || strings.HasPrefix(p.output, ".") {
		return p, fmt.Errorf("output = %q: want a plain file name without a directory", p.output)
	}
	if p.nsys == "" {
		p.nsys = "nsys"
	}
	if p.docker == "" {
		p.docker = "docker"
	}
	tv := cfg.GetAttr("target")
	if !tv.IsNull() {
		t, err := target.FromValue(tv)
		if err != nil {
			return p, err
		}
		p.target = &t
		if p.container == "" {
			p.container = t.Container
		}
		if h := tv.GetAttr("host"); !h.IsNull() && h.Type().IsObjectType() {
			p.dockerEnv = target.Str(h, "docker")
		}
		switch {
		case p.where != "":
		case t.Runtime == "docker":
			p.where = "container"
		case t.Runtime == "sim":
			p.where = "simulator"
		}
	}
	if p.where == "" {
		p.where = "host"
	}
	switch p.where {
	case "host", "container":
		// nsys takes whole seconds (--duration=N).
		if p.duration < time.Second {
			return p, fmt.Errorf("duration = %q: nsys profiles whole seconds; want at least 1s such as \"20s\"", target.Str(cfg, "duration"))
		}
		if len(p.command) == 0 {
			return p, fmt.Errorf("command is empty: name the profiled command, e.g. [\"python3\", \"bench.py\"]")
		}
		if p.where == "container" && p.container == "" {
			return p, fmt.Errorf("where = \"container\" needs a target with a container (or container = \"name\")")
		}
	case "simulator":
		if p.target == nil || p.target.Runtime != "sim" {
			return p, fmt.Errorf("where = \"simulator\" needs a target on a host with runtime = \"sim\": only rigor's simulator can profile itself")
		}
		// The simulator's capture takes any duration its trace window does: at a
		// small time scale, a fraction of a second stands for seconds of serving.
		if p.duration > sim.TraceMaxDuration {
			return p, fmt.Errorf("duration = %q: the simulator captures at most %s", target.Str(cfg, "duration"), sim.TraceMaxDuration)
		}
		// The simulator profiles its own serving work: nothing is launched, so an
		// argument that shapes a launch would be accepted and never read.
		for _, name := range []string{"command", "args", "nsys", "docker", "container", "env"} {
			if !cfg.GetAttr(name).IsNull() {
				return p, fmt.Errorf("%s: a simulator target's Nsight capture launches nothing (the simulator profiles the requests it serves), so %s would never be read; remove it, or set where = \"host\" to run a real nsys", name, name)
			}
		}
	default:
		return p, fmt.Errorf("where = %q: want \"host\", \"container\" or \"simulator\"", p.where)
	}
	env, err := child.Declared(cfg.GetAttr("env"))
	if err != nil {
		return p, err
	}
	p.env = env
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		p.envKeys = append(p.envKeys, k)
	}
	if p.dockerEnv != "" {
		p.env = append(p.env, "DOCKER_HOST="+p.dockerEnv)
	}
	return p, nil
}

// prefix is how an nsys command runs: nsys on the host, or docker exec in the
// container. docker exec passes the declared env into the container by name
// (-e KEY takes the value from the docker CLI's own environment), so no value is
// ever on a command line.
func (p plan) prefix() []string {
	if p.where == "container" {
		argv := []string{p.docker, "exec"}
		for _, k := range p.envKeys {
			argv = append(argv, "-e", k)
		}
		return append(argv, p.container, p.nsys)
	}
	return []string{p.nsys}
}

// base is the report path without extension, as the profiling nsys sees it.
func (p plan) base(dir string) string {
	if p.where == "container" {
		return containerDir + "/" + p.output
	}
	return filepath.Join(dir, p.output)
}

// Run profiles, exports and keeps the evidence.
func (Step) Run(ctx context.Context, sc *engine.StepContext) engine.Result {
	p, err := readPlan(sc)
	if err != nil {
		return engine.Failed(engine.ClassConfig, "%v", err)
	}
	if p.where == "simulator" {
		return p.simulate(ctx, sc)
	}
	// The tool that must exist here: nsys on the host, the docker CLI for a container.
	tool := p.prefix()[0]
	if _, err := osexec.LookPath(tool); err != nil {
		if p.where == "container" {
			return engine.Failed(engine.ClassToolMissing, "the docker CLI %q is not on PATH; it runs nsys inside container %s (install the Docker CLI or set docker = \"/path/to/docker\")", tool, p.container)
		}
		return engine.Failed(engine.ClassToolMissing, "Nsight Systems (%q) is not on PATH; install NVIDIA Nsight Systems on this host or set nsys = \"/path/to/nsys\" in the step", tool)
	}
	base := p.base(sc.Dir)
	secs := int(math.Ceil(p.duration.Seconds()))
	profile := append(p.prefix(), "profile", "--duration="+strconv.Itoa(secs), "--output="+base, "--force-overwrite=true")
	profile = append(profile, p.args...)
	profile = append(profile, p.command...)
	rec := captureRecord{Where: p.where, Container: p.container, RequestedDurationS: p.duration.Seconds(), Profile: profile}
	if sc.Instance != nil {
		rec.Control = ControlAddr(sc.Instance.Config())
	}
	var warnings []string

	if p.where == "container" {
		if r := p.run(ctx, sc, "mkdir", []string{p.docker, "exec", p.container, "mkdir", "-p", containerDir}, nil); r != nil {
			return *r
		}
	}
	// The capture is bounded by nsys's own --duration; the context adds room for nsys
	// to stop the application and write the report.
	capCtx, cancel := context.WithTimeout(ctx, p.duration+2*time.Minute)
	defer cancel()
	start := time.Now()
	rec.Start = start.UTC().Format(time.RFC3339Nano)
	r := p.run(capCtx, sc, "nsys-profile", profile, &warnings)
	end := time.Now()
	rec.End = end.UTC().Format(time.RFC3339Nano)
	rec.ElapsedS = end.Sub(start).Seconds()
	finish := func(res engine.Result) engine.Result {
		_ = os.WriteFile(sc.Path("warnings.txt"), []byte(strings.Join(warnings, "\n")+trailingNL(warnings)), 0o644)
		rec.Warnings = len(warnings)
		_ = writeJSON(sc.Path("capture.json"), rec)
		return res
	}
	if r != nil {
		return finish(*r)
	}
	report := ""
	for _, ext := range []string{".nsys-rep", ".qdrep"} {
		if p.where == "container" {
			r := p.run(ctx, sc, "copy-report", []string{p.docker, "cp", p.container + ":" + base + ext, sc.Path(p.output + ext)}, nil)
			if r == nil {
				report = p.output + ext
				break
			}
			if ctx.Err() != nil {
				// Interrupted or out of time while copying: say so, not "no report".
				return finish(*r)
			}
			continue
		}
		if _, err := os.Stat(base + ext); err == nil {
			report = p.output + ext
			break
		}
	}
	if report == "" {
		return finish(engine.Failed(engine.ClassExec, "nsys profile left no report %s.nsys-rep (stdout and stderr kept in nsys-profile.*.txt)", base))
	}
	rec.Report = report
	export := append(p.prefix(), "export", "--type", "sqlite", "--force-overwrite", "true", "--output", base+".sqlite", base+filepath.Ext(report))
	rec.Export = export
	if r := p.run(ctx, sc, "nsys-export", export, &warnings); r != nil {
		return finish(*r)
	}
	if p.where == "container" {
		if r := p.run(ctx, sc, "copy-sqlite", []string{p.docker, "cp", p.container + ":" + base + ".sqlite", sc.Path(p.output + ".sqlite")}, nil); r != nil {
			return finish(*r)
		}
	}
	if _, err := os.Stat(sc.Path(p.output + ".sqlite")); err != nil {
		return finish(engine.Failed(engine.ClassExec, "nsys export left no SQLite file %s.sqlite", p.output))
	}
	rec.SQLite = p.output + ".sqlite"
	finish(engine.Result{})
	return engine.Succeeded(cty.ObjectVal(map[string]cty.Value{
		"report":     cty.StringVal(rec.Report),
		"sqlite":     cty.StringVal(rec.SQLite),
		"warnings":   cty.NumberIntVal(int64(len(warnings))),
		"duration_s": cty.NumberFloatVal(rec.ElapsedS),
	}))
}

func trailingNL(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return "\n"
}

// run executes one command, keeps its output as <name>.stdout.txt/.stderr.txt, and
// collects warning lines. It returns nil on success.
func (p plan) run(ctx context.Context, sc *engine.StepContext, name string, argv []string, warnings *[]string) *engine.Result {
	cmd := child.Command(ctx, argv, p.env...)
	cmd.Dir = sc.Dir
	// Kept output is evidence: secrets the command was given through env are
	// redacted before anything is kept or quoted.
	var stdout, stderr bytes.Buffer
	redact := engine.NewRedactor(sc.Secrets...)
	outW, errW := redact.Stream(&stdout), redact.Stream(&stderr)
	cmd.Stdout, cmd.Stderr = outW, errW
	err := cmd.Run()
	_, _ = outW.Close(), errW.Close()
	_ = os.WriteFile(sc.Path(name+".stdout.txt"), stdout.Bytes(), 0o644)
	_ = os.WriteFile(sc.Path(name+".stderr.txt"), stderr.Bytes(), 0o644)
	if warnings != nil {
		*warnings = append(*warnings, warningLines(name+" stderr", stderr.Bytes())...)
		*warnings = append(*warnings, warningLines(name+" stdout", stdout.Bytes())...)
	}
	if err == nil {
		return nil
	}
	var exitErr *osexec.ExitError
	switch {
	case errors.Is(err, osexec.ErrNotFound) || errors.Is(err, os.ErrNotExist):
		r := engine.Failed(engine.ClassToolMissing, "%s: %q not found: %v", name, argv[0], err)
		return &r
	case errors.As(err, &exitErr) && p.where == "container" && exitErr.ExitCode() == 127:
		r := engine.Failed(engine.ClassToolMissing, "%s: %q is not installed in container %s (docker exec exited 127; stderr kept in %s.stderr.txt)", name, p.nsys, p.container, name)
		return &r
	case errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled):
		// An interrupt, not a failure of the capture: with no class, the engine
		// records the step as interrupted.
		return &engine.Result{Status: engine.StatusFailed, Message: fmt.Sprintf("%s stopped: %v (output kept in %s.*.txt)", name, ctx.Err(), name)}
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		r := engine.Failed(engine.ClassTimeout, "%s did not finish within its bound: %v (output kept in %s.*.txt)", name, ctx.Err(), name)
		return &r
	}
	r := sc.Redacted(engine.Failed(engine.ClassExec, "%s failed: %v (%s; output kept in %s.*.txt)", name, err, firstLine(stderr.String()), name))
	return &r
}

// warningLines returns every line that contains "Warning" or "WARNING".
func warningLines(from string, b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); strings.Contains(l, "Warning") || strings.Contains(l, "WARNING") {
			out = append(out, from+": "+l)
		}
	}
	return out
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	if s == "" {
		return "no stderr"
	}
	return s
}

// captureRecord is capture.json.
type captureRecord struct {
	Where              string   `json:"where"`
	Container          string   `json:"container,omitempty"`
	RequestedDurationS float64  `json:"requested_duration_s"`
	Start              string   `json:"start_utc"`
	End                string   `json:"end_utc"`
	ElapsedS           float64  `json:"elapsed_s"` // monotonic
	Profile            []string `json:"profile_argv"`
	Export             []string `json:"export_argv,omitempty"`
	Report             string   `json:"report,omitempty"`
	SQLite             string   `json:"sqlite,omitempty"`
	Warnings           int      `json:"warnings"`
	// Control is the address of the unprofiled control block the plan names.
	Control string `json:"control,omitempty"`
	// Simulated: the export was built from a rigor-sim server's own frames
	// (simulate.go), not by nsys; Source names the simulator and its profile.
	Simulated         bool   `json:"simulated,omitempty"`
	Source            string `json:"source,omitempty"`
	Frames            int    `json:"frames,omitempty"`
	RequestsCompleted int64  `json:"requests_completed,omitempty"`
	Incarnation       string `json:"incarnation,omitempty"`
}
