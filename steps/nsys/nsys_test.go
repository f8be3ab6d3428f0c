package nsys

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// fakeNsys writes the report on profile and the SQLite file on export, with warnings
// on stderr as the real tool prints them, and logs its argv.
const fakeNsys = `#!/bin/sh
echo "$@" >> "$FAKE_LOG"
cmd=$1; shift
case $cmd in
profile)
  out=""
  for a in "$@"; do case $a in --output=*) out=${a#--output=};; esac; done
  echo "Collecting data..."
  echo "WARNING: CPU context switch tracing not supported, disabling." >&2
  echo "Warning: GPU metrics sampling requires root" >&2
  echo "ordinary line" >&2
  printf 'NSYS-REPORT' > "$out.nsys-rep"
  ;;
export)
  out=""; prev=""
  for a in "$@"; do [ "$prev" = "--output" ] && out=$a; prev=$a; done
  echo "Warning: 3% of kernel events could not be mapped to a module" >&2
  printf 'SQLite format 3' > "$out"
  ;;
esac
`

// fakeDocker maps the container's /tmp/rigor-nsys onto a host directory and runs the
// rest on the host: exec C ARGS and cp C:SRC DST.
const fakeDocker = `#!/bin/sh
echo "docker $@" >> "$FAKE_LOG"
echo "docker sees DOCKER_HOST=$DOCKER_HOST" >> "$FAKE_LOG"
map() { echo "$1" | sed "s#/tmp/rigor-nsys#$FAKE_ROOT#g"; }
case $1 in
exec)
  shift
  while [ "$1" = "-e" ]; do shift 2; done
  c=$1; shift
  [ "$c" = "gpu-box" ] || { echo "Error: No such container: $c" >&2; exit 1; }
  for a in "$@"; do set -- "$@" "$(map "$a")"; shift; done
  exec "$@"
  ;;
cp)
  src=$(map "${2#*:}"); cp "$src" "$3"
  ;;
esac
`

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// stepContext is an nsys step's context; env is the step's declared env, KEY=VALUE.
func stepContext(t *testing.T, where string, tv cty.Value, env ...string) *engine.StepContext {
	t.Helper()
	cfg := map[string]cty.Value{}
	for k := range spec {
		cfg[k] = cty.NullVal(cty.String)
	}
	cfg["command"] = cty.ListVal([]cty.Value{cty.StringVal("python3"), cty.StringVal("bench.py")})
	cfg["args"] = cty.NullVal(cty.List(cty.String))
	cfg["env"] = cty.NullVal(cty.Map(cty.String))
	if len(env) > 0 {
		m := map[string]cty.Value{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = cty.StringVal(v)
		}
		cfg["env"] = cty.MapVal(m)
	}
	cfg["duration"] = cty.StringVal("2s")
	cfg["output"] = cty.StringVal("flare-c4")
	if where != "" {
		cfg["where"] = cty.StringVal(where)
	}
	cfg["target"] = tv
	if tv == cty.NilVal {
		cfg["target"] = cty.NullVal(cty.DynamicPseudoType)
	}
	return &engine.StepContext{Addr: "nsys.t", Instance: &plans.Instance{}, Config: cty.ObjectVal(cfg), Dir: t.TempDir(), Log: zerolog.Nop()}
}

func TestHostCaptureKeepsEvidence(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "nsys", fakeNsys)
	log := filepath.Join(t.TempDir(), "argv.log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sc := stepContext(t, "host", cty.NilVal, "FAKE_LOG="+log)
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	assertEvidence(t, sc)
	argv, _ := os.ReadFile(log)
	if !strings.Contains(string(argv), "profile --duration=2 --output="+filepath.Join(sc.Dir, "flare-c4")+" --force-overwrite=true python3 bench.py") {
		t.Errorf("profile argv: %s", argv)
	}
	if !strings.Contains(string(argv), "export --type sqlite") {
		t.Errorf("no export: %s", argv)
	}
}

func TestContainerCaptureThroughDockerExec(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "nsys", fakeNsys)
	writeScript(t, bin, "docker", fakeDocker)
	log := filepath.Join(t.TempDir(), "argv.log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	tv := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("flare"), "container": cty.StringVal("gpu-box"), "endpoint": cty.StringVal("http://127.0.0.1:1"),
		"runtime": cty.StringVal("docker"),
		"host":    cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "docker": cty.StringVal("unix:///var/run/docker.sock")}),
	})
	// A docker target profiles in its container by default.
	sc := stepContext(t, "", tv, "FAKE_LOG="+log, "FAKE_ROOT="+t.TempDir())
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	assertEvidence(t, sc)
	argv, _ := os.ReadFile(log)
	// The declared env goes into the container by name, never by value.
	if !strings.Contains(string(argv), "docker exec -e FAKE_LOG -e FAKE_ROOT gpu-box nsys profile --duration=2 --output=/tmp/rigor-nsys/flare-c4") {
		t.Errorf("not run through docker exec in the target's container: %s", argv)
	}
	// The docker CLI talks to the engine the host block names.
	if !strings.Contains(string(argv), "docker sees DOCKER_HOST=unix:///var/run/docker.sock\n") {
		t.Errorf("the docker CLI did not get the host's engine as DOCKER_HOST: %s", argv)
	}
}

func assertEvidence(t *testing.T, sc *engine.StepContext) {
	t.Helper()
	if b, err := os.ReadFile(sc.Path("flare-c4.nsys-rep")); err != nil || string(b) != "NSYS-REPORT" {
		t.Errorf("raw report not kept: %v %q", err, b)
	}
	if b, err := os.ReadFile(sc.Path("flare-c4.sqlite")); err != nil || string(b) != "SQLite format 3" {
		t.Errorf("SQLite export not kept: %v %q", err, b)
	}
	w, err := os.ReadFile(sc.Path("warnings.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(w)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "WARNING: CPU context switch") || !strings.Contains(lines[2], "could not be mapped") || strings.Contains(string(w), "ordinary line") {
		t.Errorf("warnings.txt should hold exactly the three warning lines:\n%s", w)
	}
	var rec captureRecord
	b, _ := os.ReadFile(sc.Path("capture.json"))
	if err := json.Unmarshal(b, &rec); err != nil || rec.Start == "" || rec.End == "" || rec.RequestedDurationS != 2 || rec.Warnings != 3 {
		t.Errorf("capture.json lacks the capture interval: %v %+v", err, rec)
	}
}

func TestNsysMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	res := Step{}.Run(context.Background(), stepContext(t, "host", cty.NilVal))
	if res.Class != engine.ClassToolMissing || !strings.Contains(res.Message, "Nsight Systems") || !strings.Contains(res.Message, "not on PATH") {
		t.Fatalf("%s (%s): %s; want tool_missing naming Nsight Systems", res.Status, res.Class, res.Message)
	}
}

func TestProfileFailureIsExec(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "nsys", "#!/bin/sh\necho 'Error: no CUDA device' >&2\nexit 3\n")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	sc := stepContext(t, "host", cty.NilVal)
	res := Step{}.Run(context.Background(), sc)
	if res.Class != engine.ClassExec || !strings.Contains(res.Message, "no CUDA device") {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	if _, err := os.Stat(sc.Path("capture.json")); err != nil {
		t.Errorf("a failed capture still records its interval: %v", err)
	}
}

// fakeNsysEnv records its environment and prints the API key it was given on both
// streams, then fails quoting it, as a careless profiling wrapper would.
const fakeNsysEnv = `#!/bin/sh
env > "$FAKE_LOG.env"
echo "using key $API_KEY"
echo "Error: key $API_KEY rejected" >&2
exit 2
`

// TestNsysChildGetsOnlyItsEnv runs nsys with a secret in rigor's environment and
// the same secret declared in the step's env: the child sees the declared entry and
// none of rigor's other variables, and the secret is redacted from the kept output
// and from the failure message that quotes it.
func TestNsysChildGetsOnlyItsEnv(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "nsys", fakeNsysEnv)
	log := filepath.Join(t.TempDir(), "argv.log")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	const secret = "sk-nsys-0123456789"
	t.Setenv(plans.EnvPrefix+"api_key", secret)
	t.Setenv("OTHER_TOKEN", "ghp-should-not-leak")
	sc := stepContext(t, "host", cty.NilVal, "FAKE_LOG="+log, "API_KEY="+secret)
	sc.Secrets = []string{secret}
	res := Step{}.Run(context.Background(), sc)
	if res.Class != engine.ClassExec || !strings.Contains(res.Message, "Error: key (sensitive) rejected") || strings.Contains(res.Message, secret) {
		t.Fatalf("%s (%s): %s; want an exec failure quoting the redacted stderr", res.Status, res.Class, res.Message)
	}
	env, err := os.ReadFile(log + ".env")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(env), "API_KEY="+secret) {
		t.Errorf("the declared env did not reach nsys:\n%s", env)
	}
	for _, leak := range []string{plans.EnvPrefix + "api_key", "OTHER_TOKEN"} {
		if strings.Contains(string(env), leak) {
			t.Errorf("rigor's %s reached the child:\n%s", leak, env)
		}
	}
	for _, name := range []string{"nsys-profile.stdout.txt", "nsys-profile.stderr.txt"} {
		b, err := os.ReadFile(sc.Path(name))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) || !strings.Contains(string(b), "key (sensitive)") {
			t.Errorf("%s is not redacted: %q", name, b)
		}
	}
}

// TestHangingProfileTimeoutOrInterrupt runs an nsys that never ends. At the step's
// bound it is a timeout; on an interrupt it carries no class, so the engine records
// the step as interrupted rather than as a capture that overran.
func TestHangingProfileTimeoutOrInterrupt(t *testing.T) {
	bin := t.TempDir()
	writeScript(t, bin, "nsys", "#!/bin/sh\nsleep 60 &\nexec sleep 60\n")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	res := Step{}.Run(ctx, stepContext(t, "host", cty.NilVal))
	if res.Class != engine.ClassTimeout || !strings.Contains(res.Message, "did not finish within its bound") {
		t.Errorf("at the bound: %s (%s): %s; want a timeout", res.Status, res.Class, res.Message)
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res = Step{}.Run(ctx, stepContext(t, "host", cty.NilVal))
	if res.Status != engine.StatusFailed || res.Class != "" || !strings.Contains(res.Message, "stopped: context canceled") {
		t.Errorf("on an interrupt: %s (%q): %s; want a failure with no class", res.Status, res.Class, res.Message)
	}
}

// TestCaptureFailureClasses: what cannot run is tool_missing, naming what to install
// (the docker CLI for a container capture, nsys inside the container when docker
// exec exits 127); a tool that runs but leaves no report or no SQLite export is exec.
func TestCaptureFailureClasses(t *testing.T) {
	docker := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("flare"), "container": cty.StringVal("gpu-box"), "endpoint": cty.StringVal("http://127.0.0.1:1"),
		"runtime": cty.StringVal("docker"),
		"host":    cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "docker": cty.StringVal("unix:///var/run/docker.sock")}),
	})
	cases := map[string]struct {
		nsys, docker string // scripts put on PATH; "" = none
		target       cty.Value
		class        engine.FailureClass
		want         string
	}{
		"no docker CLI": {target: docker, class: engine.ClassToolMissing,
			want: `the docker CLI "docker" is not on PATH; it runs nsys inside container gpu-box`},
		"no nsys in the container": {docker: "#!/bin/sh\necho 'exec: \"nsys\": executable file not found in $PATH' >&2\nexit 127\n", target: docker,
			class: engine.ClassToolMissing, want: `"nsys" is not installed in container gpu-box (docker exec exited 127`},
		"no report": {nsys: "#!/bin/sh\necho collected\n", target: cty.NilVal, class: engine.ClassExec,
			want: "nsys profile left no report"},
		"no sqlite": {nsys: strings.Replace(fakeNsys, `printf 'SQLite format 3' > "$out"`, `:`, 1), target: cty.NilVal, class: engine.ClassExec,
			want: "nsys export left no SQLite file flare-c4.sqlite"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			bin := t.TempDir()
			if tc.nsys != "" {
				writeScript(t, bin, "nsys", tc.nsys)
			}
			if tc.docker != "" {
				writeScript(t, bin, "docker", tc.docker)
			}
			// Only the scripts and the shell's own tools: no docker or nsys from the machine.
			t.Setenv("PATH", bin+string(os.PathListSeparator)+"/usr/bin/nonexistent-for-test")
			where := "host"
			if tc.target != cty.NilVal {
				where = ""
			}
			sc := stepContext(t, where, tc.target, "FAKE_LOG="+filepath.Join(t.TempDir(), "argv.log"))
			res := Step{}.Run(context.Background(), sc)
			if res.Status != engine.StatusFailed || res.Class != tc.class || !strings.Contains(res.Message, tc.want) {
				t.Fatalf("%s (%s): %s; want %s containing %q", res.Status, res.Class, res.Message, tc.class, tc.want)
			}
		})
	}
}
