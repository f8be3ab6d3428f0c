package nsys

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
map() { echo "$1" | sed "s#/tmp/rigor-nsys#$FAKE_ROOT#g"; }
case $1 in
exec)
  shift; c=$1; shift
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

func stepContext(t *testing.T, where string, tv cty.Value) *engine.StepContext {
	t.Helper()
	cfg := map[string]cty.Value{}
	for k := range spec {
		cfg[k] = cty.NullVal(cty.String)
	}
	cfg["command"] = cty.ListVal([]cty.Value{cty.StringVal("python3"), cty.StringVal("bench.py")})
	cfg["args"] = cty.NullVal(cty.List(cty.String))
	cfg["env"] = cty.NullVal(cty.Map(cty.String))
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
	t.Setenv("FAKE_LOG", log)
	sc := stepContext(t, "host", cty.NilVal)
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
	t.Setenv("FAKE_LOG", log)
	t.Setenv("FAKE_ROOT", t.TempDir())
	tv := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("flare"), "container": cty.StringVal("gpu-box"), "endpoint": cty.StringVal("http://127.0.0.1:1"),
		"runtime": cty.StringVal("docker"),
		"host":    cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal("node"), "docker": cty.StringVal("unix:///var/run/docker.sock")}),
	})
	sc := stepContext(t, "", tv) // a docker target profiles in its container by default
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	assertEvidence(t, sc)
	argv, _ := os.ReadFile(log)
	if !strings.Contains(string(argv), "docker exec gpu-box nsys profile --duration=2 --output=/tmp/rigor-nsys/flare-c4") {
		t.Errorf("not run through docker exec in the target's container: %s", argv)
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
