package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rogpeppe/go-internal/testscript"
)

// scriptCmds tamper with a state directory in testdata/script the way a forger
// who knows the formats would.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"forge":    forgeCmd,
	"cuttail":  cutTailCmd,
	"exitcode": exitcodeCmd,
	// corpus and cache checks (scriptcmds_test.go)
	"pilot-of":      cmdPilotOf,
	"count-within":  cmdCountWithin,
	"cached-within": cmdCachedWithin,
	"tmpfs":         cmdTmpfs,
}

// forgeCmd: forge STATE FILE TEXT replaces FILE (relative to STATE) with TEXT,
// writes its new sha256 and size into the journal record and manifest entry that
// list it, and recomputes every record's prev hash, so the chain verifies again.
func forgeCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: forge STATE FILE TEXT")
	}
	state, rel, text := ts.MkAbs(args[0]), args[1], []byte(args[2]+"\n")
	ts.Check(os.WriteFile(filepath.Join(state, rel), text, 0o644))
	sum, size := plans.SHA256Hex(text), int64(len(text))

	data, err := os.ReadFile(filepath.Join(state, engine.JournalFile))
	ts.Check(err)
	var out bytes.Buffer
	prev, found := engine.GenesisHash, false
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var r engine.Record
		ts.Check(json.Unmarshal([]byte(line), &r))
		for i := range r.Artefacts {
			if r.Artefacts[i].Path == rel {
				r.Artefacts[i].SHA256, r.Artefacts[i].Size, found = sum, size, true
			}
		}
		r.Prev = prev
		b, err := json.Marshal(r)
		ts.Check(err)
		prev = plans.SHA256Hex(b)
		out.Write(append(b, '\n'))
	}
	if !found {
		ts.Fatalf("no journal record lists %s", rel)
	}
	ts.Check(os.WriteFile(filepath.Join(state, engine.JournalFile), out.Bytes(), 0o644))

	mpath := filepath.Join(state, engine.ManifestFile)
	mb, err := os.ReadFile(mpath)
	ts.Check(err)
	var m engine.Manifest
	ts.Check(json.Unmarshal(mb, &m))
	for i := range m.Artefacts {
		if m.Artefacts[i].Path == rel {
			m.Artefacts[i].SHA256, m.Artefacts[i].Size = sum, size
		}
	}
	mb, err = json.MarshalIndent(m, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(mpath, append(mb, '\n'), 0o644))
}

// cutTailCmd: cuttail STATE N drops the journal's last N records.
func cutTailCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: cuttail STATE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	p := filepath.Join(ts.MkAbs(args[0]), engine.JournalFile)
	data, err := os.ReadFile(p)
	ts.Check(err)
	lines := strings.SplitAfter(string(data), "\n")
	ts.Check(os.WriteFile(p, []byte(strings.Join(lines[:len(lines)-1-n], "")), 0o644))
}
