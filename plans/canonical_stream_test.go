package plans_test

import (
	"bytes"
	"math/big"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
	"github.com/zclconf/go-cty/cty"
)

// TestCanonicalStreamMatchesEncodingJSON holds the streamed plan JSON to the bytes
// encoding/json writes for Canonical(): a frozen plan's hash must not change
// because the writer got faster.
func TestCanonicalStreamMatchesEncodingJSON(t *testing.T) {
	lanes, _, _ := laneCampaign(t, 200_000)
	paths := map[string]string{"lanes": lanes}
	for _, pattern := range []string{"testdata/valid/*.hcl", "../examples/*/campaign.hcl"} {
		m, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range m {
			paths[p] = p
		}
	}
	if len(paths) < 5 {
		t.Fatalf("only %d campaigns to compare", len(paths))
	}
	reg := steps.Registry().Types()
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			types := testStepTypes()
			if filepath.Base(filepath.Dir(filepath.Dir(path))) == "examples" || name == "lanes" {
				types = reg
			}
			p := mustLoad(t, path, plans.Options{StepTypes: types, Vars: nil})
			got, err := p.CanonicalJSON()
			if err != nil {
				t.Fatal(err)
			}
			want, err := plans.CanonicalJSON(p.Canonical())
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("streamed plan JSON differs from encoding/json:\n%s", cmp.Diff(string(want), string(got)))
			}
			h, err := p.Hash()
			if err != nil {
				t.Fatal(err)
			}
			if h != plans.SHA256Hex(want) {
				t.Errorf("Hash %s, want sha256 of the plan JSON %s", h, plans.SHA256Hex(want))
			}
		})
	}
}

// TestAppendCanonicalJSONValues compares the streamed encoding of single values
// with encoding/json, for the strings and numbers where encoders differ.
func TestAppendCanonicalJSONValues(t *testing.T) {
	big1, _, _ := big.ParseFloat("123456789012345678901234567890", 10, 512, big.ToNearestEven)
	cases := map[string]cty.Value{
		"plain":          cty.StringVal("hello"),
		"quotes":         cty.StringVal(`say "hi" \ back`),
		"controls":       cty.StringVal("a\x00b\x01\x1f\b\f\n\r\t"),
		"html":           cty.StringVal("<a href='x'>&amp;</a>"),
		"line separator": cty.StringVal("a\u2028b\u2029c"),
		"unicode":        cty.StringVal("héllo wörld ✓ 😀"),
		"integer":        cty.NumberIntVal(-42),
		"float":          cty.NumberFloatVal(0.1),
		"huge":           cty.NumberVal(big1),
		"tiny":           cty.NumberFloatVal(1e-300),
		"bool":           cty.True,
		"null":           cty.NullVal(cty.String),
		"unknown":        cty.UnknownVal(cty.Number).Mark(plans.KnownAfter("step.block.pilot")),
		"sensitive":      cty.StringVal("sk-1").Mark(plans.Sensitive),
		"list":           cty.ListVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		"set":            cty.SetVal([]cty.Value{cty.StringVal("b"), cty.StringVal("a")}),
		"map":            cty.MapVal(map[string]cty.Value{"z": cty.NumberIntVal(1), "a": cty.NumberIntVal(2), "é": cty.NumberIntVal(3)}),
		"object": cty.ObjectVal(map[string]cty.Value{
			"b": cty.TupleVal([]cty.Value{cty.True, cty.StringVal("x")}),
			"a": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal("v").Mark(plans.Sensitive)}),
		}),
		"empty object": cty.EmptyObjectVal,
		"nil":          cty.NilVal,
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			want, got := encodeBoth(t, v)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-encoding/json +streamed):\n%s", diff)
			}
		})
	}
}

// encodeBoth is v's JSON from encoding/json (via CanonicalValue) and from the
// streamed encoder.
func encodeBoth(t *testing.T, v cty.Value) (string, string) {
	t.Helper()
	want, err := plans.CanonicalJSON(plans.CanonicalValue(v))
	if err != nil {
		t.Fatal(err)
	}
	got, err := plans.AppendCanonicalJSON(nil, v)
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(want, []byte("\n"))), string(got)
}

// FuzzAppendCanonicalString holds the string encoder to encoding/json's for any
// bytes, valid UTF-8 or not.
func FuzzAppendCanonicalString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\x7f\x80\xff", "\u2028", "é\xc3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if want, got := encodeBoth(t, cty.StringVal(s)); want != got {
			t.Fatalf("%q: encoding/json %s, streamed %s", s, want, got)
		}
	})
}

// on_failure keyed by class is in the canonical plan as an object, the same from
// both encoders, and changes the plan hash.
func TestCanonicalOnFailureByClass(t *testing.T) {
	dir := t.TempDir()
	write := func(name, onFailure string) string {
		p := filepath.Join(dir, name)
		src := "campaign \"c\" {}\ntarget \"t\" {\n  endpoint = \"http://127.0.0.1:8000\"\n}\nstep \"deploy\" \"d\" {\n  target     = target.t\n  on_failure = " + onFailure + "\n}\n"
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	reg := steps.Registry().Types()
	byClass := mustLoad(t, write("a.hcl", `{ oom = "stop", health = "hold" }`), plans.Options{StepTypes: reg})
	got, err := byClass.CanonicalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want, err := plans.CanonicalJSON(byClass.Canonical())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"on_failure":{"health":"hold","oom":"stop"}`)) {
		t.Fatalf("canonical JSON of on_failure by class:\n%s\nencoding/json:\n%s", got, want)
	}
	single := mustLoad(t, write("b.hcl", `"hold"`), plans.Options{StepTypes: reg})
	if mustHash(t, single) == mustHash(t, byClass) {
		t.Error("on_failure by class and a single on_failure hash the same")
	}
}
