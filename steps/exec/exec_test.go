package exec

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

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
// given on stdout and stderr, and exits with EXIT_CODE.
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
