package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
)

// TestFailureClassesListsEveryClass reads failure.go's constants: a class added
// there and not to FailureClasses would make plan validate refuse an exec step's
// failure_class the engine knows.
func TestFailureClassesListsEveryClass(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "failure.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || vs.Type == nil {
			return true
		}
		if id, ok := vs.Type.(*ast.Ident); ok && id.Name == "FailureClass" {
			for _, v := range vs.Values {
				s, _ := strconv.Unquote(v.(*ast.BasicLit).Value)
				declared = append(declared, s)
			}
		}
		return true
	})
	listed := FailureClasses()
	if len(declared) < 20 {
		t.Fatalf("found %d FailureClass constants in failure.go; the parse is wrong", len(declared))
	}
	slices.Sort(declared)
	slices.Sort(listed)
	if !slices.Equal(declared, listed) {
		t.Errorf("FailureClasses() = %v\nfailure.go declares %v", listed, declared)
	}
}
