package campaigntest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/rigor-bench/rigor/engine"
)

// Journal reads the journal of a state directory.
func Journal(t *testing.T, state string) []engine.Record {
	t.Helper()
	recs, _, err := engine.ReadJournal(filepath.Join(state, engine.JournalFile))
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	return recs
}

// End is the last step_end record of a step.
func End(t *testing.T, recs []engine.Record, addr string) engine.Record {
	t.Helper()
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Kind == engine.KindStepEnd && recs[i].Step == addr {
			return recs[i]
		}
	}
	t.Fatalf("no step_end record for %s", addr)
	return engine.Record{}
}

// Outputs decodes a record's outputs.
func Outputs(t *testing.T, rec engine.Record) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec.Outputs, &m); err != nil {
		t.Fatalf("outputs of %s: %v (%s)", rec.Step, err, rec.Outputs)
	}
	return m
}

// Seq is the sequence number of the first record of kind (for step, or any step
// when step is ""), or -1.
func Seq(recs []engine.Record, kind, step string) int {
	for _, r := range recs {
		if r.Kind == kind && (step == "" || r.Step == step) {
			return r.Seq
		}
	}
	return -1
}

// ReadJSON decodes the JSON file at path into v.
func ReadJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// Ports come from below the kernel's ephemeral range (32768 and up): a port from
// Listen(":0") is an ephemeral one, and while a target restarts on it any outgoing
// connection may take it. Each test process starts at its own offset.
var (
	portMu   sync.Mutex
	nextPort = 20000 + os.Getpid()%5000
)

// FreePort returns a loopback port nothing listens on now.
func FreePort(t *testing.T) int {
	t.Helper()
	return FreePorts(t, 1)
}

// FreePorts returns the first of n consecutive loopback ports nothing listens on
// now and that this process has not handed out before.
func FreePorts(t *testing.T, n int) int {
	t.Helper()
	portMu.Lock()
	defer portMu.Unlock()
	for ; nextPort < 32000-n; nextPort += n {
		if free(nextPort, n) {
			base := nextPort
			nextPort += n
			return base
		}
	}
	t.Fatalf("no %d free consecutive loopback ports below 32000", n)
	return 0
}

func free(base, n int) bool {
	for k := range n {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+k))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
