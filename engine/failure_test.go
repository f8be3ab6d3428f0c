package engine

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"
	"time"
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

// TestDefaultPolicyAndOverrides: a request-level failure is recorded; the eight
// operational classes stop a matrix arm when they fail one of its blocks; every
// other failure stops the campaign; on_failure overrides any class.
func TestDefaultPolicyAndOverrides(t *testing.T) {
	operationalClasses := []string{"identity", "restart", "oom", "health", "missing_terminal_metadata", "undrained", "power_drift", "instrumentation_incomplete"}
	for _, c := range FailureClasses() {
		fc := FailureClass(c)
		inArm, elsewhere := PolicyStopCampaign, PolicyStopCampaign
		switch {
		case fc == ClassRecord:
			inArm, elsewhere = PolicyRecord, PolicyRecord
		case slices.Contains(operationalClasses, c):
			inArm = PolicyStopArm
		}
		if got := DefaultPolicy(fc, true); got != inArm {
			t.Errorf("%s in an arm: %s, want %s", c, got, inArm)
		}
		if got := DefaultPolicy(fc, false); got != elsewhere {
			t.Errorf("%s outside an arm: %s, want %s", c, got, elsewhere)
		}
		for _, o := range []struct {
			onFailure    string
			arm, outside Policy
		}{
			{"stop", PolicyStopCampaign, PolicyStopCampaign},
			{"stop_arm", PolicyStopArm, PolicyStopCampaign},
			{"hold", PolicyHold, PolicyHold},
			{"continue", PolicyRecord, PolicyRecord},
			{"", inArm, elsewhere},
		} {
			if got := policyFor(fc, o.onFailure, true); got != o.arm {
				t.Errorf("%s, on_failure %q, in an arm: %s, want %s", c, o.onFailure, got, o.arm)
			}
			if got := policyFor(fc, o.onFailure, false); got != o.outside {
				t.Errorf("%s, on_failure %q, outside an arm: %s, want %s", c, o.onFailure, got, o.outside)
			}
		}
	}
}

// TestOutageViewString renders the clock as its doc comment says.
func TestOutageViewString(t *testing.T) {
	o := OutageView{Open: true, Elapsed: 12*time.Minute + 3*time.Second + 700*time.Millisecond, Budget: 90 * time.Minute, Reserve: 20 * time.Minute}
	if got, want := o.String(), "outage 12m3s of 1h30m0s (20m0s reserved, 57m56s available)"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got := (OutageView{}).String(); got != "no outage open" {
		t.Errorf("closed: %q", got)
	}
}
