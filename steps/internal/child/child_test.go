package child

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zclconf/go-cty/cty"
)

func TestEnv(t *testing.T) {
	t.Setenv("PATH", "/bin")
	t.Setenv("HOME", "/home/op")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("TMPDIR", "/tmp/x")
	t.Setenv("RIGOR_VAR_api_key", "sk-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws")
	got := Env("API_KEY=sk-1", "PATH=/opt/bin")
	want := []string{"PATH=/bin", "HOME=/home/op", "LANG=C.UTF-8", "TMPDIR=/tmp/x", "API_KEY=sk-1", "PATH=/opt/bin"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeclared(t *testing.T) {
	cases := map[string]struct {
		v       cty.Value
		want    []string
		wantErr string
	}{
		"null":       {cty.NullVal(cty.Map(cty.String)), nil, ""},
		"sorted":     {cty.MapVal(map[string]cty.Value{"B": cty.StringVal("2"), "A": cty.StringVal("1")}), []string{"A=1", "B=2"}, ""},
		"null entry": {cty.MapVal(map[string]cty.Value{"A": cty.NullVal(cty.String)}), nil, "env A has no value"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Declared(tc.v)
			if (err == nil) != (tc.wantErr == "") || err != nil && err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
