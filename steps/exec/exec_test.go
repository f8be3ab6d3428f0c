package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// helperEnv switches the test binary into the child process of these tests.
const helperEnv = "RIGOR_EXEC_HELPER"

// TestMain turns the test binary into the child of these tests when helperEnv is
// set: it prints the names of its environment as JSON, then the API key it was
// given on stdout and stderr, sleeps SLEEP_MS milliseconds and exits with
// EXIT_CODE.
func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "1" {
		os.Exit(m.Run())
	}
	var names []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		names = append(names, k)
	}
	sort.Strings(names)
	b, _ := json.Marshal(names)
	fmt.Printf("%s\n", b)
	fmt.Printf("key=%s\n", os.Getenv("API_KEY"))
	fmt.Fprintf(os.Stderr, "auth failed for %s\n", os.Getenv("API_KEY"))
	if ms := os.Getenv("SLEEP_MS"); ms != "" {
		var n int
		_, _ = fmt.Sscan(ms, &n)
		time.Sleep(time.Duration(n) * time.Millisecond)
	}
	code := 0
	_, _ = fmt.Sscan(os.Getenv("EXIT_CODE"), &code)
	os.Exit(code)
}

// stepContext runs the test binary as the helper child, with env declared.
func stepContext(t *testing.T, env map[string]string, secrets ...string) *engine.StepContext {
	t.Helper()
	m := map[string]cty.Value{}
	for k, v := range env {
		m[k] = cty.StringVal(v)
	}
	cfg := cty.ObjectVal(map[string]cty.Value{
		"command":       cty.ListVal([]cty.Value{cty.StringVal(os.Args[0])}),
		"env":           cty.MapVal(m),
		"dir":           cty.NullVal(cty.String),
		"inputs":        cty.NullVal(cty.List(cty.String)),
		"failure_class": cty.NullVal(cty.String),
	})
	dir := t.TempDir()
	return &engine.StepContext{Addr: "exec.t", Instance: &plans.Instance{}, Config: cfg, Secrets: secrets, Dir: dir, BaseDir: dir, Log: zerolog.Nop()}
}

// TestChildGetsOnlyItsEnv puts an API key in rigor's environment (as RIGOR_VAR_) and
// other credentials beside it: the child sees PATH, HOME, LANG, TMPDIR and what the
// step declares, nothing else, and the key it was given through env is redacted
// from both kept streams and from the failure message.
func TestChildGetsOnlyItsEnv(t *testing.T) {
	const secret = "sk-live-abcdef0123456789"
	t.Setenv(plans.EnvPrefix+"api_key", secret)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
	t.Setenv("HOME", t.TempDir())
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TMPDIR", t.TempDir())
	sc := stepContext(t, map[string]string{helperEnv: "1", "API_KEY": secret, "EXIT_CODE": "3"}, secret)
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusFailed || res.Class != engine.ClassExec {
		t.Fatalf("%s (%s): %s; want the exit status 3 as an exec failure", res.Status, res.Class, res.Message)
	}
	if !strings.Contains(res.Message, "exited with status 3: auth failed for (sensitive)") || strings.Contains(res.Message, secret) {
		t.Errorf("message should quote the redacted last stderr line: %s", res.Message)
	}
	stdout, err := os.ReadFile(sc.Path("stdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := strings.Cut(string(stdout), "\n")
	var names []string
	if err := json.Unmarshal([]byte(first), &names); err != nil {
		t.Fatalf("child output %q: %v", stdout, err)
	}
	want := []string{"API_KEY", "EXIT_CODE", "HOME", "LANG", "PATH", helperEnv, "TMPDIR"}
	sort.Strings(want)
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("child environment (-want +got):\n%s", diff)
	}
	if rest != "key=(sensitive)\n" {
		t.Errorf("stdout after the environment = %q, want the key redacted", rest)
	}
	stderr, err := os.ReadFile(sc.Path("stderr.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(stderr) != "auth failed for (sensitive)\n" {
		t.Errorf("stderr.txt = %q, want the key redacted", stderr)
	}
	sum, _ := plans.FileSHA256(sc.Path("stdout.txt"))
	if got := res.Outputs.GetAttr("stdout_sha256").AsString(); got != sum {
		t.Errorf("stdout_sha256 %s is not the hash of the kept (redacted) stdout %s", got, sum)
	}
}

// TestNullEnvEntryIsConfig refuses an env entry without a value instead of
// panicking on it.
func TestNullEnvEntryIsConfig(t *testing.T) {
	sc := stepContext(t, map[string]string{helperEnv: "1"})
	cfg := sc.Config.AsValueMap()
	cfg["env"] = cty.MapVal(map[string]cty.Value{"API_KEY": cty.NullVal(cty.String)})
	sc.Config = cty.ObjectVal(cfg)
	res := Step{}.Run(context.Background(), sc)
	if res.Class != engine.ClassConfig || !strings.Contains(res.Message, "env API_KEY has no value") {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
}

// TestBoundIsTimeoutInterruptIsNot runs a child that outlives its context twice:
// killed at the step's hard bound (a deadline) it is a timeout failure; cancelled
// by an interrupt it is no failure class at all, so the engine records the step
// as interrupted rather than blaming the command.
func TestBoundIsTimeoutInterruptIsNot(t *testing.T) {
	env := map[string]string{helperEnv: "1", "SLEEP_MS": "20000"}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := Step{}.Run(ctx, stepContext(t, env))
	if res.Status != engine.StatusFailed || res.Class != engine.ClassTimeout || !strings.Contains(res.Message, "had not finished as the step's hard bound neared: it was killed with everything it started, just before the bound") {
		t.Errorf("at the bound: %s (%s): %s; want a timeout failure", res.Status, res.Class, res.Message)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the child was not killed at its bound: the step took %v", took)
	}

	// A process that left the command's group keeps its stdout open: the kill
	// does not end it, so Run returns only once the grace for collecting output
	// is over, at the bound itself, when the step's own context has expired too.
	// That is still the bound, not an interrupt.
	sc := stepContext(t, map[string]string{"LANE": "1"})
	sc.Config = withCommand(sc.Config, "sh", "-c", "setsid sleep 1 & sleep 20")
	ctx, cancel = context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	res = Step{}.Run(ctx, sc)
	if ctx.Err() == nil || res.Class != engine.ClassTimeout {
		t.Errorf("at the bound, output held past it: %s (%s): %s (context: %v); want a timeout failure", res.Status, res.Class, res.Message, ctx.Err())
	}

	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	res = Step{}.Run(ctx, stepContext(t, env))
	if res.Status != engine.StatusFailed || res.Class != "" || !strings.Contains(res.Message, "stopped: context canceled") {
		t.Errorf("interrupted: %s (%q): %s; want no failure class", res.Status, res.Class, res.Message)
	}
}

// withCommand is cfg with its command replaced by argv.
func withCommand(cfg cty.Value, argv ...string) cty.Value {
	m := cfg.AsValueMap()
	var list []cty.Value
	for _, a := range argv {
		list = append(list, cty.StringVal(a))
	}
	m["command"] = cty.ListVal(list)
	return cty.ObjectVal(m)
}
