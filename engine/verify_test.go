package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/schemas"
	"golang.org/x/crypto/ssh"
)

// verifyPlan holds the campaign (a gate fails), so it can still be amended: a
// closed campaign accepts no amendment.
const verifyPlan = header + `
step "probe" "a" {}
step "probe" "b" { value = step.probe.a.value }
step "probe" "c" { fail = "record" }
step "probe" "gate" { fail = "gate" }
step "probe" "restore" { always = true }
`

// fixture is a real state directory: applied by the engine (one probe fails, so
// failure records are covered), then amended, with an SSH key to sign it.
type fixture struct {
	*harness
	art     string // an artefact of probe.b
	seq     int    // the journal's length as built: the last record is the amendment
	key     ssh.Signer
	allowed string // an allowed_signers file listing key
}

func newFixture(t *testing.T, multiFile bool) *fixture {
	t.Helper()
	h := newHarness(t)
	load := func(extra string) *plans.Plan { return h.load(verifyPlan + extra) }
	if multiFile {
		// A campaign directory: plan/src/ instead of plan/frozen.hcl.
		dir := filepath.Join(h.dir, "campaign")
		must(t, os.MkdirAll(dir, 0o755))
		must(t, os.WriteFile(filepath.Join(dir, "a.hcl"), []byte(header+"step \"probe\" \"a\" {}\nstep \"probe\" \"b\" { value = step.probe.a.value }\n"), 0o644))
		must(t, os.WriteFile(filepath.Join(dir, "b.hcl"), []byte("step \"probe\" \"c\" { fail = \"record\" }\nstep \"probe\" \"gate\" { fail = \"gate\" }\nstep \"probe\" \"restore\" { always = true }\n"), 0o644))
		load = func(extra string) *plans.Plan {
			if extra != "" {
				must(t, os.WriteFile(filepath.Join(dir, "c.hcl"), []byte(extra), 0o644))
			}
			p, _, diags := plans.Load(dir, plans.Options{StepTypes: h.reg.Types(), Env: []string{}})
			if diags.HasErrors() {
				t.Fatalf("load: %s", diagText(diags))
			}
			return p
		}
	}
	if _, err := h.apply(context.Background(), load("")); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.RecordAmendment(h.state, load(`step "probe" "later" {}`+"\n"), "cover one more step", h.clock); err != nil {
		t.Fatal(err)
	}
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	must(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	must(t, err)
	f := &fixture{harness: h, key: signer, allowed: filepath.Join(h.dir, "allowed_signers")}
	must(t, os.WriteFile(f.allowed, append([]byte("reviewer@rigor "), ssh.MarshalAuthorizedKey(signer.PublicKey())...), 0o644))
	for _, r := range h.records() {
		if r.Kind == engine.KindStepEnd && r.Step == "probe.b" && len(r.Artefacts) > 0 {
			f.art = r.Artefacts[0].Path
		}
	}
	if f.art == "" {
		t.Fatal("probe.b recorded no artefact")
	}
	f.seq = f.head().Seq
	rep, err := engine.VerifyState(h.state, engine.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("a fresh, amended state must verify: %v %+v", err, rep)
	}
	return f
}

// expand puts the fixture's journal length in for {seq}, and the one after for {next}.
func (f *fixture) expand(s string) string {
	return strings.NewReplacer("{seq}", f.seqText(), "{next}", strconv.Itoa(f.seq+1)).Replace(s)
}

func (f *fixture) seqText() string { return strconv.Itoa(f.seq) }

func (f *fixture) path(rel string) string {
	return filepath.Join(f.state, filepath.FromSlash(f.expand(rel)))
}

func (f *fixture) head() engine.Head {
	f.t.Helper()
	h, err := engine.JournalHead(f.state)
	must(f.t, err)
	return h
}

func (f *fixture) sign() engine.Head {
	f.t.Helper()
	s, err := engine.SignHead(f.state, f.key)
	must(f.t, err)
	return s.Head
}

// rechain rewrites the journal after edit, recomputing every prev hash and the
// manifest, as a forger who knows the format would: the chain alone then verifies.
func (f *fixture) rechain(edit func([]engine.Record) []engine.Record) {
	f.t.Helper()
	recs := edit(f.records())
	var buf bytes.Buffer
	prev := engine.GenesisHash
	for i := range recs {
		recs[i].Seq, recs[i].Prev = i+1, prev
		line, err := json.Marshal(recs[i])
		must(f.t, err)
		prev = plans.SHA256Hex(line)
		buf.Write(append(line, '\n'))
	}
	must(f.t, os.WriteFile(f.path(engine.JournalFile), buf.Bytes(), 0o644))
	must(f.t, engine.WriteManifest(f.state, recs))
}

// forge replaces probe.b's output and re-chains the journal to match it.
func (f *fixture) forge() { f.t.Helper(); f.replace(f.art, []byte("forged output\n")) }

// replace rewrites a recorded file, records its new hash and re-chains the journal.
func (f *fixture) replace(rel string, content []byte) {
	f.t.Helper()
	must(f.t, os.WriteFile(f.path(rel), content, 0o644))
	f.rechain(func(recs []engine.Record) []engine.Record {
		for i := range recs {
			for j := range recs[i].Artefacts {
				if recs[i].Artefacts[j].Path == rel {
					recs[i].Artefacts[j].SHA256, recs[i].Artefacts[j].Size = plans.SHA256Hex(content), int64(len(content))
				}
			}
		}
		return recs
	})
}

// editAmendment rewrites amendments/0001.json through edit and re-records it, as a
// forger would, so only its meaning can give it away.
func (f *fixture) editAmendment(edit func(a map[string]any)) {
	f.t.Helper()
	b, err := os.ReadFile(f.path("amendments/0001.json"))
	must(f.t, err)
	var a map[string]any
	must(f.t, json.Unmarshal(b, &a))
	edit(a)
	out, err := json.MarshalIndent(a, "", "  ")
	must(f.t, err)
	f.replace("amendments/0001.json", append(out, '\n'))
}

// lastRecord edits the journal's last record and re-chains.
func (f *fixture) lastRecord(edit func(r *engine.Record)) {
	f.t.Helper()
	f.rechain(func(recs []engine.Record) []engine.Record { edit(&recs[len(recs)-1]); return recs })
}

// cut drops the journal's last n records (whole lines).
func (f *fixture) cut(n int) {
	f.t.Helper()
	b, err := os.ReadFile(f.path(engine.JournalFile))
	must(f.t, err)
	lines := strings.SplitAfter(string(b), "\n")
	lines = lines[:len(lines)-1-n] // SplitAfter leaves "" after the last newline
	must(f.t, os.WriteFile(f.path(engine.JournalFile), []byte(strings.Join(lines, "")), 0o644))
}

func (f *fixture) flip(rel string) {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	must(f.t, err)
	b[len(b)/2] ^= 0x01
	must(f.t, os.WriteFile(f.path(rel), b, 0o644))
}

func (f *fixture) truncate(rel string) {
	f.t.Helper()
	b, err := os.ReadFile(f.path(rel))
	must(f.t, err)
	must(f.t, os.WriteFile(f.path(rel), b[:len(b)/2], 0o644))
}

func (f *fixture) write(rel, content string) {
	f.t.Helper()
	must(f.t, os.MkdirAll(filepath.Dir(f.path(rel)), 0o755))
	must(f.t, os.WriteFile(f.path(rel), []byte(content), 0o644))
}

func (f *fixture) remove(rel string) { f.t.Helper(); must(f.t, os.RemoveAll(f.path(rel))) }

func (f *fixture) editManifest(edit func(m *engine.Manifest)) {
	f.t.Helper()
	b, err := os.ReadFile(f.path(engine.ManifestFile))
	must(f.t, err)
	var m engine.Manifest
	must(f.t, json.Unmarshal(b, &m))
	edit(&m)
	out, err := json.MarshalIndent(m, "", "  ")
	must(f.t, err)
	must(f.t, os.WriteFile(f.path(engine.ManifestFile), append(out, '\n'), 0o644))
}

// TestVerifyDetectsTampering: every kind of change to a state directory is a
// problem that names the path that changed (or journal.jsonl for a journal cut or
// rewritten). Cases marked anchored pass without the anchor (--head or
// --allowed-signers): they are what the anchor is for.
func TestVerifyDetectsTampering(t *testing.T) {
	withHead := func(h engine.Head) engine.VerifyOptions { return engine.VerifyOptions{Head: h.String()} }
	cases := map[string]struct {
		multiFile bool
		// tamper changes the state and returns the options to verify with.
		tamper   func(f *fixture) engine.VerifyOptions
		path     string
		want     string
		anchored bool
	}{
		// journal.jsonl
		"journal: flipped byte in an early record": {
			tamper: func(f *fixture) engine.VerifyOptions {
				b, _ := os.ReadFile(f.path(engine.JournalFile))
				i := bytes.Index(b, []byte(`"probe.a"`))
				b[i+2] = 'X'
				must(t, os.WriteFile(f.path(engine.JournalFile), b, 0o644))
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "does not match the hash of line",
		},
		"journal: truncated inside its last record": {
			tamper: func(f *fixture) engine.VerifyOptions {
				b, _ := os.ReadFile(f.path(engine.JournalFile))
				must(t, os.WriteFile(f.path(engine.JournalFile), b[:len(b)-20], 0o644))
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "the last record is not terminated",
		},
		"journal: deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove(engine.JournalFile); return engine.VerifyOptions{} },
			path:   engine.JournalFile, want: "missing: without the journal",
		},
		"journal: a record removed from the middle": {
			tamper: func(f *fixture) engine.VerifyOptions {
				b, _ := os.ReadFile(f.path(engine.JournalFile))
				lines := strings.SplitAfter(string(b), "\n")
				must(t, os.WriteFile(f.path(engine.JournalFile), []byte(strings.Join(append(lines[:3:3], lines[4:]...), "")), 0o644))
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "line 4 has seq 5",
		},
		"journal: a record naming a file outside the state directory": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.rechain(func(recs []engine.Record) []engine.Record {
					recs[len(recs)-1].Artefacts = append(recs[len(recs)-1].Artefacts, engine.Artefact{Path: "../outside", SHA256: engine.GenesisHash})
					return recs
				})
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: `names "../outside", which is not a path inside the state directory`,
		},
		"journal: tail cut, caught by the manifest": {
			tamper: func(f *fixture) engine.VerifyOptions { f.cut(3); return engine.VerifyOptions{} },
			path:   engine.JournalFile, want: "records were cut from the end of the journal, or manifest.json was edited",
		},
		"journal: tail cut and its traces removed, caught by --head": {
			tamper: func(f *fixture) engine.VerifyOptions {
				h := f.head()
				f.rechain(func(recs []engine.Record) []engine.Record { return recs[:len(recs)-1] }) // the amendment
				f.remove(engine.AmendmentsDir)
				return withHead(h)
			},
			path: engine.JournalFile, want: "records were cut from the end of the journal", anchored: true,
		},
		"journal: tail cut below a signed head": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.rechain(func(recs []engine.Record) []engine.Record { return recs[:len(recs)-1] })
				f.remove(engine.AmendmentsDir)
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "records were cut from its end",
		},
		"journal: output forged and chain recomputed, caught by --head": {
			tamper: func(f *fixture) engine.VerifyOptions {
				h := f.head()
				f.forge()
				return withHead(h)
			},
			path: engine.JournalFile, want: "the journal was rewritten at or before record", anchored: true,
		},
		"journal: output forged and chain recomputed, caught by --head given as a bare hash": {
			tamper: func(f *fixture) engine.VerifyOptions {
				h := f.head()
				f.forge()
				return engine.VerifyOptions{Head: h.SHA256}
			},
			path: engine.JournalFile, want: "no record hashes to", anchored: true,
		},
		"journal: output forged and chain recomputed, caught by the signature": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.forge()
				return engine.VerifyOptions{AllowedSigners: f.allowed}
			},
			path: engine.JournalFile, want: "after it was signed",
		},
		"journal: empty": {
			tamper: func(f *fixture) engine.VerifyOptions { f.write(engine.JournalFile, ""); return engine.VerifyOptions{} },
			path:   engine.JournalFile, want: "holds no records",
		},
		"journal: does not start with plan_frozen": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.rechain(func(recs []engine.Record) []engine.Record { return recs[1:] })
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "record 1 is apply_start, not plan_frozen",
		},
		"journal: a second plan_frozen record": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.rechain(func(recs []engine.Record) []engine.Record { return append(recs, recs[0]) })
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "holds 2 plan_frozen records (the second is record {next})",
		},
		"journal: a file recorded twice": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.lastRecord(func(r *engine.Record) {
					for _, rec := range f.records() {
						if rec.Step == "probe.b" && rec.Kind == engine.KindStepEnd {
							r.Artefacts = append(r.Artefacts, rec.Artefacts...)
						}
					}
				})
				return engine.VerifyOptions{}
			},
			path: "attempts/probe.b/1/out.txt", want: "(step_end of probe.b attempt 1) and by journal record {seq} (amendment 1)",
		},
		"journal: an attempt directory outside the state directory": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.rechain(func(recs []engine.Record) []engine.Record {
					for i := range recs {
						if recs[i].Kind == engine.KindStepStart {
							recs[i].Dir = "attempts/../../x"
							break
						}
					}
					return recs
				})
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: `names directory "attempts/../../x", which is not inside the state directory`,
		},
		// signatures/
		"signatures: head file that holds no head": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.write("signatures/head-{seq}.txt", "the latest\n")
				return engine.VerifyOptions{}
			},
			path: "signatures/head-{seq}.txt", want: `does not hold the head of record {seq} as "{seq}:SHA256\n"`,
		},
		"signatures: signature without its head file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.remove("signatures/head-{seq}.txt")
				return engine.VerifyOptions{}
			},
			path: "signatures/head-{seq}.txt.sig", want: "signs head-{seq}.txt, which is missing",
		},
		"signatures: forged, re-chained and re-signed with another key": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.forge()
				f.remove(engine.SignaturesDir)
				_, other, _ := ed25519.GenerateKey(rand.Reader)
				s, _ := ssh.NewSignerFromKey(other)
				_, err := engine.SignHead(f.state, s)
				must(t, err)
				return engine.VerifyOptions{AllowedSigners: f.allowed}
			},
			path: engine.SignaturesDir + "/head-{seq}.txt.sig", want: "a key the allowed signers file does not list", anchored: true,
		},
		"signatures: forged, re-chained and signatures deleted": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.forge()
				f.remove(engine.SignaturesDir)
				return engine.VerifyOptions{AllowedSigners: f.allowed}
			},
			path: engine.SignaturesDir, want: "no head of this journal signed by an allowed signer", anchored: true,
		},
		"signatures: signed head edited": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.write("signatures/head-{seq}.txt", f.seqText()+":"+strings.Repeat("0", 64)+"\n")
				return engine.VerifyOptions{}
			},
			path: "signatures/head-{seq}.txt.sig", want: "does not match the message and key",
		},
		"signatures: flipped byte in a signature": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				b, _ := os.ReadFile(f.path("signatures/head-{seq}.txt.sig"))
				b = bytes.Replace(b, []byte("AAAA"), []byte("AAAB"), 1)
				must(t, os.WriteFile(f.path("signatures/head-{seq}.txt.sig"), b, 0o644))
				return engine.VerifyOptions{}
			},
			path: "signatures/head-{seq}.txt.sig", want: "invalid SSH signature",
		},
		"signatures: signature deleted": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.remove("signatures/head-{seq}.txt.sig")
				return engine.VerifyOptions{}
			},
			path: "signatures/head-{seq}.txt", want: "has no signature",
		},
		"signatures: stray file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.sign()
				f.write("signatures/notes.txt", "trust me\n")
				return engine.VerifyOptions{}
			},
			path: "signatures/notes.txt", want: "stray file",
		},
		// plan/
		"plan: flipped byte in frozen.hcl": {
			tamper: func(f *fixture) engine.VerifyOptions { f.flip("plan/frozen.hcl"); return engine.VerifyOptions{} },
			path:   "plan/frozen.hcl", want: "journal recorded",
		},
		"plan: frozen.hcl truncated": {
			tamper: func(f *fixture) engine.VerifyOptions { f.truncate("plan/frozen.hcl"); return engine.VerifyOptions{} },
			path:   "plan/frozen.hcl", want: "journal recorded size",
		},
		"plan: frozen.hcl deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove("plan/frozen.hcl"); return engine.VerifyOptions{} },
			path:   "plan/frozen.hcl", want: "missing (recorded by journal record 1 (plan_frozen))",
		},
		"plan: flipped byte in a source of a multi-file campaign": {
			multiFile: true,
			tamper:    func(f *fixture) engine.VerifyOptions { f.flip("plan/src/b.hcl"); return engine.VerifyOptions{} },
			path:      "plan/src/b.hcl", want: "journal recorded",
		},
		"plan: plan.json changed": {
			tamper: func(f *fixture) engine.VerifyOptions {
				b, _ := os.ReadFile(f.path("plan/plan.json"))
				f.write("plan/plan.json", string(bytes.Replace(b, []byte(`"probe.a"`), []byte(`"probe.A"`), 1)))
				return engine.VerifyOptions{}
			},
			path: "plan/plan.json", want: "does not hold the frozen plan hash",
		},
		"plan: flipped byte in plan.sha256": {
			tamper: func(f *fixture) engine.VerifyOptions { f.flip("plan/plan.sha256"); return engine.VerifyOptions{} },
			path:   "plan/plan.sha256", want: "does not hold the frozen plan hash",
		},
		"plan: plan.sha256 deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove("plan/plan.sha256"); return engine.VerifyOptions{} },
			path:   "plan/plan.sha256", want: "missing",
		},
		"plan: stray file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("plan/notes.hcl", "# later\n")
				return engine.VerifyOptions{}
			},
			path: "plan/notes.hcl", want: "stray file: no journal record accounts for it",
		},
		// manifest.json
		"manifest: an entry's hash changed": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editManifest(func(m *engine.Manifest) {
					for i := range m.Artefacts {
						if m.Artefacts[i].Path == f.art {
							m.Artefacts[i].SHA256 = strings.Repeat("ab", 32)
						}
					}
				})
				return engine.VerifyOptions{}
			},
			path: engine.ManifestFile, want: "is sha256 ababababab",
		},
		"manifest: an entry removed": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editManifest(func(m *engine.Manifest) { m.Artefacts = m.Artefacts[1:] })
				return engine.VerifyOptions{}
			},
			path: engine.ManifestFile, want: "omits amendments/0001.json, which journal record {seq} (amendment 1) records",
		},
		"manifest: an entry added": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editManifest(func(m *engine.Manifest) {
					m.Artefacts = append(m.Artefacts, engine.ManifestEntry{Artefact: engine.Artefact{Path: "attempts/probe.x/1/out.txt", SHA256: engine.GenesisHash}})
				})
				return engine.VerifyOptions{}
			},
			path: engine.ManifestFile, want: "lists attempts/probe.x/1/out.txt",
		},
		"manifest: an entry listed twice": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editManifest(func(m *engine.Manifest) { m.Artefacts = append(m.Artefacts, m.Artefacts[0]) })
				return engine.VerifyOptions{}
			},
			path: engine.ManifestFile, want: "lists amendments/0001.json twice",
		},
		"manifest: truncated": {
			tamper: func(f *fixture) engine.VerifyOptions { f.truncate(engine.ManifestFile); return engine.VerifyOptions{} },
			path:   engine.ManifestFile, want: "does not parse",
		},
		"manifest: deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove(engine.ManifestFile); return engine.VerifyOptions{} },
			path:   engine.ManifestFile, want: "missing",
		},
		"manifest: same entries, other bytes": {
			tamper: func(f *fixture) engine.VerifyOptions {
				b, _ := os.ReadFile(f.path(engine.ManifestFile))
				var buf bytes.Buffer
				must(t, json.Compact(&buf, b))
				f.write(engine.ManifestFile, buf.String())
				return engine.VerifyOptions{}
			},
			path: engine.ManifestFile, want: "its bytes are not the ones rigor writes",
		},
		"manifest: leftover temporary file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("manifest.json.tmp", "{}")
				return engine.VerifyOptions{}
			},
			path: "manifest.json.tmp", want: "interrupted manifest write",
		},
		// amendments/
		"amendments: flipped byte in 0001.json": {
			tamper: func(f *fixture) engine.VerifyOptions { f.flip("amendments/0001.json"); return engine.VerifyOptions{} },
			path:   "amendments/0001.json", want: "journal recorded",
		},
		"amendments: a source of 0001 changed": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("amendments/0001/campaign.hcl", verifyPlan)
				return engine.VerifyOptions{}
			},
			path: "amendments/0001/campaign.hcl", want: "journal recorded",
		},
		"amendments: 0001.json deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove("amendments/0001.json"); return engine.VerifyOptions{} },
			path:   "amendments/0001.json", want: "missing (recorded by journal record {seq} (amendment 1))",
		},
		"amendments: record numbered out of order": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.lastRecord(func(r *engine.Record) { r.Amendment = 2 })
				return engine.VerifyOptions{}
			},
			path: engine.JournalFile, want: "journal record {seq} (amendment 2) should be amendment 1",
		},
		"amendments: 0001.json re-recorded with another number": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editAmendment(func(a map[string]any) { a["number"] = 2 })
				return engine.VerifyOptions{}
			},
			path: "amendments/0001.json", want: "says it is amendment 2, but journal record {seq} (amendment 1) recorded amendment 1",
		},
		"amendments: 0001.json re-recorded with another plan hash": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editAmendment(func(a map[string]any) { a["plan_sha256"] = strings.Repeat("ab", 32) })
				return engine.VerifyOptions{}
			},
			path: "amendments/0001.json", want: "plan_sha256 abababab",
		},
		"amendments: 0001.json re-recorded with another plan": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editAmendment(func(a map[string]any) { a["plan"].(map[string]any)["forged"] = true })
				return engine.VerifyOptions{}
			},
			path: "amendments/0001.json", want: "its plan does not hash to its plan_sha256",
		},
		"amendments: 0001.json re-recorded with another previous plan": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.editAmendment(func(a map[string]any) { a["previous_plan_sha256"] = strings.Repeat("cd", 32) })
				return engine.VerifyOptions{}
			},
			path: "amendments/0001.json", want: "previous_plan_sha256 cdcdcdcd",
		},
		"amendments: stray file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("amendments/0002.json", "{}\n")
				return engine.VerifyOptions{}
			},
			path: "amendments/0002.json", want: "stray file",
		},
		// attempts/
		"attempts: flipped byte in an artefact": {
			tamper: func(f *fixture) engine.VerifyOptions { f.flip(f.art); return engine.VerifyOptions{} },
			path:   "attempts/probe.b/1/out.txt", want: "journal recorded",
		},
		"attempts: artefact truncated": {
			tamper: func(f *fixture) engine.VerifyOptions { f.truncate(f.art); return engine.VerifyOptions{} },
			path:   "attempts/probe.b/1/out.txt", want: "journal recorded size 8",
		},
		"attempts: artefact deleted": {
			tamper: func(f *fixture) engine.VerifyOptions { f.remove(f.art); return engine.VerifyOptions{} },
			path:   "attempts/probe.b/1/out.txt", want: "missing (recorded by journal record",
		},
		"attempts: artefact replaced by a symlink": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.remove(f.art)
				must(t, os.Symlink(f.path("plan/plan.json"), f.path(f.art)))
				return engine.VerifyOptions{}
			},
			path: "attempts/probe.b/1/out.txt", want: "not a regular file",
		},
		"attempts: stray file in an attempt": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("attempts/probe.b/1/extra.txt", "added later\n")
				return engine.VerifyOptions{}
			},
			path: "attempts/probe.b/1/extra.txt", want: "stray file: no journal record accounts for it",
		},
		"attempts: files of an attempt whose step_end was cut": {
			tamper: func(f *fixture) engine.VerifyOptions { f.cut(3); return engine.VerifyOptions{} },
			path:   "attempts/probe.restore/1/out.txt", want: "(step_start of probe.restore attempt 1) has no step_end: the apply crashed, or the journal's tail with its step_end was cut); not covered by any hash",
		},
		"attempts: stray empty directory": {
			tamper: func(f *fixture) engine.VerifyOptions {
				must(t, os.MkdirAll(f.path("attempts/probe.b/2"), 0o755))
				return engine.VerifyOptions{}
			},
			path: "attempts/probe.b/2", want: "stray directory",
		},
		// the state root
		"root: stray file": {
			tamper: func(f *fixture) engine.VerifyOptions { f.write("notes.md", "by hand\n"); return engine.VerifyOptions{} },
			path:   "notes.md", want: "stray file: not part of a rigor state directory",
		},
		"root: stray directory with a file": {
			tamper: func(f *fixture) engine.VerifyOptions {
				f.write("extra/data.json", "{}\n")
				return engine.VerifyOptions{}
			},
			path: "extra/data.json", want: "stray file",
		},
		"root: stray symlink": {
			tamper: func(f *fixture) engine.VerifyOptions {
				must(t, os.Symlink("attempts", f.path("latest")))
				return engine.VerifyOptions{}
			},
			path: "latest", want: "not a regular file (L---------): a state directory holds only the files rigor wrote",
		},
		"root: lock file with content": {
			tamper: func(f *fixture) engine.VerifyOptions { f.write("lock", "x"); return engine.VerifyOptions{} },
			path:   "lock", want: "always empty",
		},
		"root: lock.pid without a pid": {
			tamper: func(f *fixture) engine.VerifyOptions { f.write("lock.pid", "hello\n"); return engine.VerifyOptions{} },
			path:   "lock.pid", want: "does not hold a process id",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.multiFile)
			opts := tc.tamper(f)
			rep, err := engine.VerifyState(f.state, opts)
			if err != nil {
				t.Fatal(err)
			}
			path, want := f.expand(tc.path), f.expand(tc.want)
			if !named(rep.Problems, path, want) {
				t.Fatalf("Verify did not report %s with %q; problems:\n%s", path, want, problemText(rep.Problems))
			}
			if tc.anchored {
				plain, err := engine.VerifyState(f.state, engine.VerifyOptions{})
				if err != nil || len(plain.Problems) != 0 {
					t.Fatalf("without the anchor this tampering should pass unnoticed (it is what the anchor is for), got %v:\n%s", err, problemText(plain.Problems))
				}
			}
		})
	}
}

func named(problems []engine.Problem, path, want string) bool {
	for _, p := range problems {
		if p.Path == path && strings.Contains(p.Problem, want) {
			return true
		}
	}
	return false
}

func problemText(problems []engine.Problem) string {
	var b strings.Builder
	for _, p := range problems {
		b.WriteString("  " + p.Path + ": " + p.Problem + "\n")
	}
	return b.String()
}

// TestRechainIsFaithful: the forger's re-chain reproduces an untouched journal byte
// for byte, so the forgery cases above are the real thing.
func TestRechainIsFaithful(t *testing.T) {
	f := newFixture(t, false)
	before, _ := os.ReadFile(f.path(engine.JournalFile))
	manifest, _ := os.ReadFile(f.path(engine.ManifestFile))
	f.rechain(func(r []engine.Record) []engine.Record { return r })
	after, _ := os.ReadFile(f.path(engine.JournalFile))
	manifestAfter, _ := os.ReadFile(f.path(engine.ManifestFile))
	if !bytes.Equal(before, after) || !bytes.Equal(manifest, manifestAfter) {
		t.Fatal("re-chaining an unchanged journal changed its bytes or the manifest")
	}
}

// TestVerifyReportsCoverage: a clean state reports its head, what it checked, the
// signatures and who made them, and report/ as derived.
func TestVerifyReportsCoverage(t *testing.T) {
	f := newFixture(t, false)
	h := f.sign()
	f.write("report/summary.json", "{}\n")
	rep, err := engine.VerifyState(f.state, engine.VerifyOptions{Head: h.String(), AllowedSigners: f.allowed})
	if err != nil {
		t.Fatal(err)
	}
	want := &engine.VerifyReport{
		Head: h, Records: f.seq,
		// plan/: frozen.hcl, plan.json, plan.sha256; amendments/: 0001.json and
		// 0001/campaign.hcl; attempts/: one out.txt per probe step (a, b, c, gate, restore)
		Files: 10, ManifestEntries: 10, HeadFound: &h,
		Signatures: []engine.SignatureCheck{{Path: f.expand("signatures/head-{seq}.txt.sig"), Head: h,
			Key: "ssh-ed25519 " + ssh.FingerprintSHA256(f.key.PublicKey()), Principals: "reviewer@rigor"}},
		Derived:  []string{"report/summary.json"},
		Problems: []engine.Problem{},
	}
	if diff := cmp.Diff(want, rep); diff != "" {
		t.Fatalf("report (-want +got):\n%s", diff)
	}
	// lock.pid left by a killed apply is noted, not evidence.
	f.write("lock.pid", "99999999\n")
	rep, err = engine.VerifyState(f.state, engine.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("%v\n%s", err, problemText(rep.Problems))
	}
	if !slices.Contains(rep.Notes, "lock.pid: process 99999999, which wrote it, is not running here (killed, or the state was copied); not evidence") {
		t.Fatalf("notes: %q", rep.Notes)
	}
	f.remove("lock.pid")
	// Records appended after the signed head are said to be outside it.
	j, err := engine.OpenJournal(f.path(engine.JournalFile), f.clock)
	must(t, err)
	_, err = j.Append(engine.Record{Kind: "hold", Message: "a kind this version does not know"})
	must(t, err)
	must(t, j.Close())
	rep, err = engine.VerifyState(f.state, engine.VerifyOptions{AllowedSigners: f.allowed})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("%v\n%s", err, problemText(rep.Problems))
	}
	next := strconv.Itoa(f.seq + 1)
	if diff := cmp.Diff([]string{"records " + next + " to " + next + " come after the last signed head (" + f.seqText() + "); no signature covers them"}, rep.Notes); diff != "" {
		t.Fatalf("notes (-want +got):\n%s", diff)
	}
}

// TestVerifyCleanStates: states rigor itself leaves behind verify, including after
// a crash once the next apply recovered it.
func TestVerifyCleanStates(t *testing.T) {
	t.Run("multi-file campaign, amended", func(t *testing.T) {
		f := newFixture(t, true)
		if _, err := os.Stat(f.path("plan/src/a.hcl")); err != nil {
			t.Fatal("a multi-file campaign freezes plan/src/")
		}
		if _, err := os.Stat(f.path("amendments/0001/c.hcl")); err != nil {
			t.Fatal("the amendment keeps its sources")
		}
	})
	t.Run("crashed, then recovered", func(t *testing.T) {
		h := newHarness(t)
		p := h.load(header + `
step "probe" "a" {}
step "probe" "b" { sleep = "1s" }
step "probe" "restore" { always = true }
`)
		// Copy the state while probe.b runs: the copy is what a kill leaves behind.
		crashed := filepath.Join(h.dir, "crashed")
		done := make(chan error, 1)
		go func() { _, err := h.apply(context.Background(), p); done <- err }()
		for a := range h.probe.started {
			if a == "probe.b" {
				break
			}
		}
		must(t, os.CopyFS(crashed, os.DirFS(h.state)))
		must(t, <-done)
		rep, err := engine.VerifyState(crashed, engine.VerifyOptions{})
		must(t, err)
		// The copy holds this test's pid in lock.pid, as a state under a running apply does.
		running := fmt.Sprintf("rigor process %d may still be running it", os.Getpid())
		if !named(rep.Problems, "attempts/probe.b/1/out.txt", "(step_start of probe.b attempt 1) has no step_end: "+running) {
			t.Fatalf("the crashed state's open attempt must be reported:\n%s", problemText(rep.Problems))
		}
		if diff := cmp.Diff([]string{fmt.Sprintf("lock.pid: rigor process %d holds this state directory; an attempt it is running is not yet covered by a hash", os.Getpid())}, rep.Notes); diff != "" {
			t.Fatalf("notes (-want +got):\n%s", diff)
		}
		// The next apply recovers it; sleep is shortened by cancelling the re-run.
		h.state = crashed
		ctx := h.interruptWhen("probe.b", "SIGINT")
		if _, err := h.apply(ctx, p); err != nil {
			t.Fatal(err)
		}
		rep, err = engine.VerifyState(crashed, engine.VerifyOptions{})
		if err != nil || len(rep.Problems) != 0 {
			t.Fatalf("a recovered state must verify: %v\n%s", err, problemText(rep.Problems))
		}
	})
}

// TestVerifyThroughSymlink: a state directory named through a symlink is still
// walked whole.
func TestVerifyThroughSymlink(t *testing.T) {
	f := newFixture(t, false)
	f.write("plan/notes.hcl", "# later\n")
	link := filepath.Join(f.dir, "link")
	must(t, os.Symlink(f.state, link))
	rep, err := engine.VerifyState(link, engine.VerifyOptions{})
	must(t, err)
	if !named(rep.Problems, "plan/notes.hcl", "stray file") {
		t.Fatalf("the stray file was not found through the symlink:\n%s", problemText(rep.Problems))
	}
}

// TestVerifyOlderJournals: a journal written before plan_frozen and amendment
// records carried file hashes still verifies; its plan sources are then checked
// against manifest.json, which says so.
func TestVerifyOlderJournals(t *testing.T) {
	f := newFixture(t, false)
	f.rechain(func(recs []engine.Record) []engine.Record {
		for i := range recs {
			if recs[i].Kind == engine.KindPlanFrozen || recs[i].Kind == engine.KindAmendment {
				recs[i].Artefacts = nil
			}
		}
		return recs
	})
	rep, err := engine.VerifyState(f.state, engine.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("an older journal must verify: %v\n%s", err, problemText(rep.Problems))
	}
	if len(rep.Notes) != 2 || !strings.Contains(rep.Notes[0], "predates plan file hashes") || !strings.Contains(rep.Notes[1], "predates amendment file hashes") {
		t.Fatalf("notes must say what an older journal does not cover: %q", rep.Notes)
	}
	f.flip("plan/frozen.hcl")
	f.write("plan/plan.sha256", "0\n")
	f.remove("plan/plan.json")
	f.remove("amendments/0001.json")
	rep, err = engine.VerifyState(f.state, engine.VerifyOptions{})
	must(t, err)
	for path, want := range map[string]string{
		"plan/frozen.hcl":      "manifest.json is the only record of this file",
		"plan/plan.sha256":     "does not hold the frozen plan hash",
		"plan/plan.json":       "missing (written at freeze, journal record 1)",
		"amendments/0001.json": "missing (recorded by journal record " + f.seqText() + " (amendment 1))",
	} {
		if !named(rep.Problems, path, want) {
			t.Errorf("tampering with an older state must still show %s: %q:\n%s", path, want, problemText(rep.Problems))
		}
	}
}

// TestVerifyUnknownRecordKinds: records of kinds this version does not know (other
// parts of rigor add them) neither break verify nor hide their artefacts.
func TestVerifyUnknownRecordKinds(t *testing.T) {
	f := newFixture(t, false)
	f.write("attempts/refresh/1/inspect.json", `{"image":"sha256:1"}`+"\n")
	art := engine.Artefact{Path: "attempts/refresh/1/inspect.json", Size: 21, SHA256: plans.SHA256Hex([]byte(`{"image":"sha256:1"}` + "\n"))}
	f.rechain(func(recs []engine.Record) []engine.Record {
		return append(recs, engine.Record{Kind: "refresh", Time: recs[0].Time, Artefacts: []engine.Artefact{art}}, engine.Record{Kind: "hold", Time: recs[0].Time})
	})
	rep, err := engine.VerifyState(f.state, engine.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("unknown kinds must verify: %v\n%s", err, problemText(rep.Problems))
	}
	if rep.Files != 11 {
		t.Fatalf("the refresh record's artefact was not checked: %d files", rep.Files)
	}
	f.flip(art.Path)
	rep, _ = engine.VerifyState(f.state, engine.VerifyOptions{})
	if !named(rep.Problems, art.Path, "journal record "+strconv.Itoa(f.seq+1)+" (refresh)") {
		t.Fatalf("a changed artefact of an unknown kind must be named:\n%s", problemText(rep.Problems))
	}
}

func TestParseHead(t *testing.T) {
	hash := strings.Repeat("3f", 32)
	cases := map[string]struct {
		in      string
		want    engine.Head
		wantErr bool
	}{
		"seq and hash": {in: "68:" + hash, want: engine.Head{Seq: 68, SHA256: hash}},
		"hash alone":   {in: hash, want: engine.Head{SHA256: hash}},
		"short hash":   {in: "68:3f2a", wantErr: true},
		"upper case":   {in: "68:" + strings.ToUpper(hash), wantErr: true},
		"seq zero":     {in: "0:" + hash, wantErr: true},
		"elided":       {in: "68:3f2a…", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := engine.ParseHead(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v, wantErr %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); !tc.wantErr && diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := (engine.Head{Seq: 68, SHA256: hash}).String(); got != "68:"+hash {
		t.Fatalf("String() = %s", got)
	}
}

// TestJournalHead: the head is the last line's sha256, the value the next record
// carries as prev.
func TestJournalHead(t *testing.T) {
	f := newFixture(t, false)
	h := f.head()
	j, err := engine.OpenJournal(f.path(engine.JournalFile), f.clock)
	must(t, err)
	next, err := j.Append(engine.Record{Kind: engine.KindInterrupt})
	must(t, err)
	must(t, j.Close())
	if h.Seq != len(f.records())-1 || next.Prev != h.SHA256 || next.Seq != h.Seq+1 {
		t.Fatalf("head %s, next record seq %d prev %s", h, next.Seq, next.Prev)
	}
	st, err := engine.ReadStatus(f.state)
	must(t, err)
	if st.Head.Seq != h.Seq+1 || st.Head.SHA256 == h.SHA256 {
		t.Fatalf("status head %s should be the new last record", st.Head)
	}
}

func TestSignHead(t *testing.T) {
	f := newFixture(t, false)
	s, err := engine.SignHead(f.state, f.key)
	must(t, err)
	if s.Head != f.head() || s.Message != f.expand("signatures/head-{seq}.txt") || s.Signature != f.expand("signatures/head-{seq}.txt.sig") {
		t.Fatalf("signed %+v", s)
	}
	msg, _ := os.ReadFile(f.path(s.Message))
	if string(msg) != s.Head.String()+"\n" {
		t.Fatalf("message %q", msg)
	}
	if _, err := engine.SignHead(f.state, f.key); !errors.Is(err, engine.ErrAlreadySigned) {
		t.Fatalf("signing the same head twice: %v", err)
	}
	// A state that does not verify is not signed: the signature would vouch for it.
	f.flip(f.art)
	j, _ := engine.OpenJournal(f.path(engine.JournalFile), f.clock)
	_, _ = j.Append(engine.Record{Kind: engine.KindInterrupt})
	_ = j.Close()
	_, err = engine.SignHead(f.state, f.key)
	var nv *engine.NotVerifiedError
	if !errors.As(err, &nv) || !named(nv.Problems, f.art, "journal recorded") {
		t.Fatalf("want NotVerifiedError naming %s, got %v", f.art, err)
	}
	if _, err := os.Stat(f.path(fmt.Sprintf("signatures/head-%d.txt", f.seq+1))); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a refused signature left a file behind")
	}
}

func TestVerifyUsageErrors(t *testing.T) {
	f := newFixture(t, false)
	bad := filepath.Join(f.dir, "bad_signers")
	must(t, os.WriteFile(bad, []byte("alice cert-authority "+string(ssh.MarshalAuthorizedKey(f.key.PublicKey()))), 0o644))
	for name, opts := range map[string]engine.VerifyOptions{
		"head":                    {Head: "68:nothex"},
		"missing allowed":         {AllowedSigners: filepath.Join(f.dir, "nope")},
		"unsupported allowed opt": {AllowedSigners: bad},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := engine.VerifyState(f.state, opts); !errors.Is(err, engine.ErrVerifyUsage) {
				t.Fatalf("want ErrVerifyUsage, got %v", err)
			}
		})
	}
}

// TestEvidenceMatchesSchemas validates every journal record the engine writes and
// the manifest against the embedded JSON Schemas.
func TestEvidenceMatchesSchemas(t *testing.T) {
	fx := newFixture(t, false)
	f, err := os.Open(fx.path(engine.JournalFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if err := schemas.Validate("journal-record", sc.Bytes()); err != nil {
			t.Errorf("journal record does not validate: %v\n%s", err, sc.Text())
		}
		var r engine.Record
		_ = json.Unmarshal(sc.Bytes(), &r)
		kinds[r.Kind] = true
		// The records that freeze the plan and start an apply name the build.
		if want := (r.Kind == engine.KindPlanFrozen || r.Kind == engine.KindApplyStart); want != (r.Rigor == testRigor) {
			t.Errorf("%s record %d names rigor %q; plan_frozen and apply_start name %q, no other record does", r.Kind, r.Seq, r.Rigor, testRigor)
		}
		if (r.Kind == engine.KindPlanFrozen || r.Kind == engine.KindAmendment) && len(r.Artefacts) == 0 {
			t.Errorf("%s record carries no file hashes", r.Kind)
		}
	}
	// Every step was handed the build as well, for the results it writes.
	fx.probe.mu.Lock()
	for addr, v := range fx.probe.rigor {
		if v != testRigor {
			t.Errorf("%s saw StepContext.Rigor %q, want %q", addr, v, testRigor)
		}
	}
	if len(fx.probe.rigor) == 0 {
		t.Error("no probe step ran")
	}
	fx.probe.mu.Unlock()
	for _, k := range []string{engine.KindPlanFrozen, engine.KindApplyStart, engine.KindAmendment, engine.KindStepStart, engine.KindStepEnd, engine.KindCampaignEnd} {
		if !kinds[k] {
			t.Errorf("the campaign wrote no %s record; the schema check would be vacuous", k)
		}
	}
	b, err := os.ReadFile(fx.path(engine.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.Validate("manifest", b); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	var m engine.Manifest
	must(t, json.Unmarshal(b, &m))
	listed := false
	for _, a := range m.Artefacts {
		listed = listed || a.Path == fx.art
	}
	if !listed {
		t.Errorf("manifest.json does not list %s", fx.art)
	}
	// The schema is not vacuous: a manifest entry without a hash is rejected.
	if err := schemas.Validate("manifest", []byte(`{"artefacts":[{"path":"x","size":1}]}`)); err == nil {
		t.Error("manifest entry without sha256 validated")
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
