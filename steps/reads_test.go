package steps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/plans"
)

// TestEveryStepArgumentIsRead: every argument a step type's schema accepts is named
// again in its package's code outside the schema (a read such as target.Str(cfg,
// "name")), or set by the language through MatrixArguments. An argument written only
// in the schema is accepted and read by nothing (as the block step's cell was): the
// suite fails on it.
func TestEveryStepArgumentIsRead(t *testing.T) {
	for name, st := range Registry() {
		dir := strings.TrimPrefix(reflect.TypeOf(st).PkgPath(), "github.com/rigor-bench/rigor/steps/")
		uses := stringUses(t, dir)
		var matrixOnly []string
		if ma, ok := st.(plans.MatrixArguments); ok {
			matrixOnly = ma.MatrixArguments()
		}
		for arg := range st.Spec() {
			if slices.Contains(matrixOnly, arg) {
				continue
			}
			if uses[arg] == 0 {
				t.Errorf("step type %s accepts %q, but package %s names it only in its schema: read it or refuse it", name, arg, dir)
			}
		}
	}
}

// The detector itself: a schema argument that only the schema and MatrixArguments
// name counts as unread; one read by target.Str counts.
func TestStringUsesSeesAnUnreadArgument(t *testing.T) {
	uses := stringUses(t, "testdata/unread")
	if uses["cell"] != 0 || uses["rate"] != 1 {
		t.Fatalf("uses %v: want cell unread (only in the schema and MatrixArguments), rate read once", uses)
	}
}

// stringUses counts the string literals of a package's non-test Go files outside its
// schema (hcldec.ObjectSpec literals, whose keys, names and range checks all repeat
// the argument's name without reading it).
func stringUses(t *testing.T, dir string) map[string]int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("package %s: %v", dir, err)
	}
	uses := map[string]int{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		file, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if fd, ok := n.(*ast.FuncDecl); ok && fd.Name.Name == "MatrixArguments" {
				return false // names arguments the language sets, reads none
			}
			if cl, ok := n.(*ast.CompositeLit); ok {
				if sel, ok := cl.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "ObjectSpec" {
					return false
				}
			}
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					uses[s]++
				}
			}
			return true
		})
	}
	return uses
}
