//go:build cgo

package nvml

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMakefileSilencesGoNVML compiles go-nvml twice: with the Go environment's
// default CGO_CFLAGS gcc prints its deprecation warnings (so the test can see
// them), and with the CGO_CFLAGS of the Makefile's commands (make quickstart, make
// test) it prints nothing at all. A define that changes nothing else is added to
// both, so that neither is a build cache hit (a hit prints nothing) while the
// packages without C come from the cache.
func TestMakefileSilencesGoNVML(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed")
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	mk := exec.Command("make", "-s", "-C", root, "cgo-cflags")
	mk.Env = withoutCgoFlags(os.Environ())
	out, err := mk.Output()
	if err != nil {
		t.Fatalf("make cgo-cflags: %v", err)
	}
	makeFlags := strings.TrimSpace(string(out))
	nonce := fmt.Sprintf(" -DRIGOR_WARNINGS_TEST=%d", time.Now().UnixNano())
	build := func(flags string) string {
		t.Helper()
		cmd := exec.Command("go", "build", "github.com/NVIDIA/go-nvml/pkg/nvml")
		cmd.Dir = root
		cmd.Env = append(withoutCgoFlags(os.Environ()), "CGO_CFLAGS="+flags+nonce)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("go build go-nvml (CGO_CFLAGS=%q): %v\n%s", flags, err, stderr.Bytes())
		}
		return stderr.String()
	}
	if got := build("-O2 -g"); !strings.Contains(got, "-Wdeprecated-declarations") {
		t.Fatalf("without the Makefile's flags, expected gcc's deprecation warnings; got %q", got)
	}
	if got := build(makeFlags); got != "" {
		t.Errorf("with the Makefile's CGO_CFLAGS %q the build printed:\n%s", makeFlags, got)
	}
}

// withoutCgoFlags drops CGO_CFLAGS from an environment, so the test starts from Go's
// default whatever the shell running it exports.
func withoutCgoFlags(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "CGO_CFLAGS=") {
			out = append(out, e)
		}
	}
	return out
}
