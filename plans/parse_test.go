package plans

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// trickySource exercises what topLevelCuts must step over: heredocs whose lines
// look like the end of a block, comments and strings holding braces, escaped
// interpolations, one-line blocks and CRLF line endings.
const trickySource = `# a comment with { and " in it
// another } comment
/* a block comment
step "exec" "fake" {
} */
campaign "tricky" { description = "braces } { in a string" }

variable "v" {
  default = <<EOT
}
step "exec" "not_a_step" {
  command = ["${"}"}"]
}
EOT
}

variable "w" {
  default = <<-EOT
    $${literal} %%{literal} ${upper("}")}
    EOT
}

target "t" { endpoint = "http://127.0.0.1:1" }
step "exec" "e" {
  command = ["sh", "-c", "echo \"}\" '{'", "${ { a = "}" }.a }"]
  env     = { A = "%{ if true }}%{ endif }" }
}` + "\r\nstep \"exec\" \"crlf\" {\r\n  command = [\"true\"]\r\n}\r\n"

// nodes lists every node of a parsed body with its type and source range, the
// block structure included, sorted, so two parses can be compared exactly. (The
// Attributes and Blocks collections are left out: their ranges depend on map
// order.)
func nodes(t *testing.T, f *hcl.File) []string {
	t.Helper()
	var out []string
	body := f.Body.(*hclsyntax.Body)
	out = append(out, fmt.Sprintf("root %s end %s", body.SrcRange, body.EndRange))
	diags := hclsyntax.VisitAll(body, func(n hclsyntax.Node) hcl.Diagnostics {
		switch n.(type) {
		case hclsyntax.Attributes, hclsyntax.Blocks:
			return nil
		}
		s := fmt.Sprintf("%T %s", n, n.Range())
		if b, ok := n.(*hclsyntax.Block); ok {
			s += fmt.Sprintf(" %s %q type %s labels %v open %s close %s", b.Type, b.Labels, b.TypeRange, b.LabelRanges, b.OpenBraceRange, b.CloseBraceRange)
		}
		if a, ok := n.(*hclsyntax.Attribute); ok {
			s += fmt.Sprintf(" %s name %s equals %s", a.Name, a.NameRange, a.EqualsRange)
		}
		out = append(out, s)
		return nil
	})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sort.Strings(out)
	return out
}

// TestChunkedParseMatchesWholeFile parses large files in pieces and whole, and
// requires the same syntax tree at the same positions, and the same "in block"
// context for diagnostics.
func TestChunkedParseMatchesWholeFile(t *testing.T) {
	examples, err := filepath.Glob("../examples/*/campaign.hcl")
	if err != nil || len(examples) == 0 {
		t.Fatalf("no example campaigns: %v", err)
	}
	var sources = map[string]string{"tricky": trickySource}
	for _, e := range examples {
		b, err := os.ReadFile(e)
		if err != nil {
			t.Fatal(err)
		}
		sources[filepath.Base(filepath.Dir(e))] = string(b)
	}
	for name, src := range sources {
		t.Run(name, func(t *testing.T) {
			// Repeat the source until the file is parsed in pieces.
			big := []byte(strings.Repeat(src+"\n", piecewiseBytes/len(src)+2))
			cuts := topLevelCuts(big, pieceBytes)
			if len(cuts) == 0 {
				t.Fatal("no cuts: the file would not be parsed in pieces")
			}
			chunked := parseChunks(big, "big.hcl", cuts)
			if chunked == nil {
				t.Fatal("a piece failed to parse")
			}
			whole, diags := hclsyntax.ParseConfig(big, "big.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags.Error())
			}
			if diff := cmp.Diff(nodes(t, whole), nodes(t, chunked)); diff != "" {
				t.Fatalf("(-whole +chunked):\n%s", diff)
			}
			for _, c := range cuts {
				for _, off := range []int{c.byte - 2, c.byte + 40} {
					w := whole.Nav.(interface{ ContextString(int) string }).ContextString(off)
					g := chunked.Nav.(interface{ ContextString(int) string }).ContextString(off)
					if w != g {
						t.Errorf("context at byte %d: whole %q, chunked %q", off, w, g)
					}
				}
			}
		})
	}
}

// TestParseHCLFallsBack checks that a large file with an error is parsed whole,
// so its diagnostics are hclsyntax's own.
func TestParseHCLFallsBack(t *testing.T) {
	src := strings.Repeat(trickySource+"\n", piecewiseBytes/len(trickySource)+2) + "step \"exec\" \"broken\" {\n  command = [\n}\n"
	f, diags := parseHCL(hclparse.NewParser(), []byte(src), "big.hcl")
	_, want := hclsyntax.ParseConfig([]byte(src), "big.hcl", hcl.InitialPos)
	if f == nil || !diags.HasErrors() || diags.Error() != want.Error() {
		t.Fatalf("diagnostics %q, want hclsyntax's %q", diags.Error(), want.Error())
	}
}

// FuzzChunkedParse cuts any input at every place topLevelCuts allows: whenever
// every piece parses, the whole file must parse to the same tree.
func FuzzChunkedParse(f *testing.F) {
	f.Add([]byte(trickySource))
	for _, pattern := range []string{"../examples/*/campaign.hcl", "testdata/valid/*.hcl", "testdata/invalid/*.hcl"} {
		m, _ := filepath.Glob(pattern)
		for _, p := range m {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		toks, _ := hclsyntax.LexConfig(src, "f.hcl", hcl.InitialPos)
		if checkNesting(toks) != nil {
			return // hclsyntax could not parse it whole without running out of stack
		}
		cuts := topLevelCuts(src, 1)
		if len(cuts) == 0 {
			return
		}
		chunked := parseChunks(src, "f.hcl", cuts)
		if chunked == nil {
			return
		}
		whole, diags := hclsyntax.ParseConfig(src, "f.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("every piece parsed but the whole file has errors: %s", diags.Error())
		}
		if diff := cmp.Diff(nodes(t, whole), nodes(t, chunked)); diff != "" {
			t.Fatalf("(-whole +chunked):\n%s", diff)
		}
	})
}
