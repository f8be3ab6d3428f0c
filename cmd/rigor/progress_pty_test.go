//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"golang.org/x/sys/unix"
)

// openPTY opens a pseudo-terminal: what rigor writes to the slave, a person at the
// terminal would see; the test reads it from the master.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	s, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A terminal has a size; mpb asks for it.
	if err := unix.IoctlSetWinsize(int(s.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 160}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); m.Close() })
	return m, s
}

// TestBarsOnARedactedTerminal sets up stderr as the CLI does, a terminal behind the
// redacting writer: the progress view still draws bars there, and a secret in a
// line logged meanwhile is redacted.
func TestBarsOnARedactedTerminal(t *testing.T) {
	master, slave := openPTY(t)
	var seen bytes.Buffer
	var mu sync.Mutex
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := master.Read(b)
			mu.Lock()
			seen.Write(b[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	redact := engine.NewRedactor("sk-tty-secret")
	g := &globals{logFormat: "console", logLevel: "info", stderr: redact.Writer(slave), redact: redact}
	if err := g.setupLog(); err != nil {
		t.Fatal(err)
	}
	v := newProgressView(g)
	if _, ok := v.(*barView); !ok {
		t.Fatalf("progress view on a terminal is %T, want bars", v)
	}
	v.update("block.b", engine.Progress{Done: 3, Failed: 0, Total: 8, Rate: "100 tok/s"}, engine.OutageView{})
	lg := v.logger()
	lg.Warn().Msg("scrape http://x/metrics?token=sk-tty-secret failed")
	time.Sleep(500 * time.Millisecond) // a few refreshes
	v.update("block.b", engine.Progress{Done: 8, Total: 8, Rate: "120 tok/s"}, engine.OutageView{})
	v.finish("block.b", true)
	time.Sleep(200 * time.Millisecond)
	mu.Lock()
	got := seen.String()
	mu.Unlock()
	for _, want := range []string{"3/8 done, 0 failed", "8/8 done", "token=(sensitive) failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal shows no %q:\n%q", want, got)
		}
	}
	if strings.Contains(got, "sk-tty-secret") {
		t.Errorf("the secret reached the terminal:\n%q", got)
	}
}
