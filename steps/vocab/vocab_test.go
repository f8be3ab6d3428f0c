package vocab_test

import (
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/vocab"
)

// TestCoversTheLanguage proves the language checks every enumeration and format
// its schemas name: one missing here would be silently unchecked.
func TestCoversTheLanguage(t *testing.T) {
	v := vocab.Vocabulary()
	for _, name := range plans.EnumNames() {
		if len(v.Enums[name]) == 0 {
			t.Errorf("enumeration %q has no names", name)
		}
	}
	for _, name := range plans.CheckNames() {
		if v.Checks[name] == nil {
			t.Errorf("format %q has no parser", name)
		}
	}
	if len(v.Enums) != len(plans.EnumNames()) || len(v.Checks) != len(plans.CheckNames()) {
		t.Errorf("vocabulary has %d enumerations and %d formats; the language names %d and %d", len(v.Enums), len(v.Checks), len(plans.EnumNames()), len(plans.CheckNames()))
	}
}
