package block

import (
	"fmt"
	"math/big"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/zclconf/go-cty/cty"
)

// fixedOutput reads a workload's fixed-output settings (seed 000's fixture): the
// min_tokens and ignore_eos request fields, and the per-request assertions
// assert_prompt_tokens and assert_completion_tokens. An attribute of the wrong type
// is an error, never a silently dropped setting.
func fixedOutput(wl *loadgen.Workload, w cty.Value) error {
	ints := []struct {
		name string
		dst  **int
		min  int64
	}{
		{"min_tokens", &wl.MinTokens, 0},
		{"assert_prompt_tokens", &wl.AssertPromptTokens, 1},
		{"assert_completion_tokens", &wl.AssertCompletionTokens, 1},
	}
	for _, a := range ints {
		v := attrOf(w, a.name)
		if v.IsNull() {
			continue
		}
		if !v.IsKnown() || v.Type() != cty.Number {
			return fmt.Errorf("workload %s: want a whole number, got %s", a.name, v.Type().FriendlyName())
		}
		n, acc := v.AsBigFloat().Int64()
		if acc != big.Exact || n < a.min {
			return fmt.Errorf("workload %s = %s: want a whole number >= %d", a.name, v.AsBigFloat().Text('g', -1), a.min)
		}
		i := int(n)
		*a.dst = &i
	}
	if v := attrOf(w, "ignore_eos"); !v.IsNull() {
		if !v.IsKnown() || v.Type() != cty.Bool {
			return fmt.Errorf("workload ignore_eos: want true or false, got %s", v.Type().FriendlyName())
		}
		wl.IgnoreEOS = v.True()
	}
	return nil
}
