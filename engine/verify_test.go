package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/schemas"
)

// verifiedState applies a small campaign (one probe fails, so failure records are
// covered too) and returns the state directory and one artefact path.
func verifiedState(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t)
	src := header + `
step "probe" "a" {}
step "probe" "b" { value = step.probe.a.value }
step "probe" "c" { fail = "record" }
step "probe" "restore" { always = true }
`
	if _, err := h.apply(context.Background(), h.load(src)); err != nil {
		t.Fatal(err)
	}
	problems, err := engine.Verify(h.state)
	if err != nil || len(problems) != 0 {
		t.Fatalf("a fresh state must verify: %v %v", problems, err)
	}
	var art string
	for _, r := range h.records() {
		if r.Kind == engine.KindStepEnd && r.Step == "probe.b" && len(r.Artefacts) > 0 {
			art = r.Artefacts[0].Path
		}
	}
	if art == "" {
		t.Fatal("probe.b recorded no artefact")
	}
	return h, art
}

func TestVerifyDetectsTampering(t *testing.T) {
	cases := map[string]struct {
		mutate func(t *testing.T, state, art string) string // returns the path Verify must name
		want   string
	}{
		"flipped byte in an artefact": {
			mutate: func(t *testing.T, state, art string) string {
				p := filepath.Join(state, filepath.FromSlash(art))
				b, _ := os.ReadFile(p)
				b[0] ^= 0x01
				must(t, os.WriteFile(p, b, 0o644))
				return art
			},
			want: "sha256",
		},
		"truncated journal": {
			mutate: func(t *testing.T, state, _ string) string {
				p := filepath.Join(state, engine.JournalFile)
				b, _ := os.ReadFile(p)
				must(t, os.WriteFile(p, b[:len(b)-20], 0o644))
				return engine.JournalFile
			},
			want: "truncated",
		},
		"deleted artefact": {
			mutate: func(t *testing.T, state, art string) string {
				must(t, os.Remove(filepath.Join(state, filepath.FromSlash(art))))
				return art
			},
			want: "missing",
		},
		"stray file": {
			mutate: func(t *testing.T, state, art string) string {
				stray := filepath.ToSlash(filepath.Join(filepath.Dir(art), "extra.txt"))
				must(t, os.WriteFile(filepath.Join(state, filepath.FromSlash(stray)), []byte("added later\n"), 0o644))
				return stray
			},
			want: "stray file",
		},
		"changed frozen plan": {
			mutate: func(t *testing.T, state, _ string) string {
				p := filepath.Join(state, engine.PlanDir, "plan.json")
				b, _ := os.ReadFile(p)
				must(t, os.WriteFile(p, bytes.Replace(b, []byte(`"probe.a"`), []byte(`"probe.A"`), 1), 0o644))
				return engine.PlanDir + "/plan.json"
			},
			want: "frozen plan hash",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h, art := verifiedState(t)
			path := tc.mutate(t, h.state, art)
			problems, err := engine.Verify(h.state)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, p := range problems {
				if p.Path == path && strings.Contains(p.Problem, tc.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("Verify did not name %s with %q: %+v", path, tc.want, problems)
			}
		})
	}
}

// TestEvidenceMatchesSchemas validates every journal record the engine writes and
// the manifest against the embedded JSON Schemas.
func TestEvidenceMatchesSchemas(t *testing.T) {
	h, art := verifiedState(t)
	f, err := os.Open(filepath.Join(h.state, engine.JournalFile))
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
		var r struct{ Kind string }
		_ = json.Unmarshal(sc.Bytes(), &r)
		kinds[r.Kind] = true
	}
	for _, k := range []string{engine.KindPlanFrozen, engine.KindStepStart, engine.KindStepEnd, engine.KindCampaignEnd} {
		if !kinds[k] {
			t.Errorf("the campaign wrote no %s record; the schema check would be vacuous", k)
		}
	}
	b, err := os.ReadFile(filepath.Join(h.state, engine.ManifestFile))
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
		listed = listed || a.Path == art
	}
	if !listed {
		t.Errorf("manifest.json does not list %s", art)
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
