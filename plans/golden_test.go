package plans_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
)

// validCampaigns lists testdata/valid: every *.hcl file and every directory (a
// campaign split over several files), keyed by name without extension.
func validCampaigns(t testing.TB) map[string]string {
	t.Helper()
	entries, err := os.ReadDir("testdata/valid")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		path := filepath.Join("testdata/valid", e.Name())
		switch {
		case e.IsDir():
			out[e.Name()] = path
		case strings.HasSuffix(e.Name(), ".hcl"):
			out[strings.TrimSuffix(e.Name(), ".hcl")] = path
		}
	}
	if len(out) < 3 {
		t.Fatalf("want at least 3 valid campaigns in testdata/valid, found %d", len(out))
	}
	return out
}

// TestGoldenPlans compares the canonical plan JSON of every valid campaign with
// testdata/golden/NAME.json (stored indented for review; run go test -update to
// rewrite them).
func TestGoldenPlans(t *testing.T) {
	for name, path := range validCampaigns(t) {
		t.Run(name, func(t *testing.T) {
			p := mustLoad(t, path, plans.Options{})
			got := mustJSON(t, p)
			if h := mustHash(t, p); h != plans.SHA256Hex(got) {
				t.Errorf("Hash() = %s, want sha256 of CanonicalJSON() %s", h, plans.SHA256Hex(got))
			}
			var indented bytes.Buffer
			if err := json.Indent(&indented, got, "", "  "); err != nil {
				t.Fatalf("canonical JSON is not valid JSON: %v", err)
			}
			golden := filepath.Join("testdata/golden", name+".json")
			if *update {
				if err := os.WriteFile(golden, indented.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./plans -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), indented.String()); diff != "" {
				t.Errorf("canonical plan differs from %s (-want +got):\n%s", golden, diff)
			}
			// The golden, compacted again, is byte for byte the hashed document.
			var compact bytes.Buffer
			if err := json.Compact(&compact, want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(strings.TrimSpace(compact.String()), strings.TrimSpace(string(got))); diff != "" {
				t.Errorf("compacted golden differs from canonical JSON (-want +got):\n%s", diff)
			}
		})
	}
}
