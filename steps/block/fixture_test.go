package block_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/zclconf/go-cty/cty"
)

// The fixed-output fixture as a campaign declares it (seed 000): the simulator
// honours min_tokens = max_tokens = 1024 with ignore_eos, so every request completes
// with exactly 1024 tokens and the prompt and completion assertions hold. Nominal
// context 512 renders 384 prompt tokens, plus the chat template's three markers.
func TestBlockFixedOutputFixture(t *testing.T) {
	rn := startSim(t, sim.Config{})
	fixture := func(prompt int64) map[string]cty.Value {
		return map[string]cty.Value{
			"max_tokens":               cty.NumberIntVal(1024),
			"min_tokens":               cty.NumberIntVal(1024),
			"ignore_eos":               cty.True,
			"assert_prompt_tokens":     cty.NumberIntVal(prompt),
			"assert_completion_tokens": cty.NumberIntVal(1024),
		}
	}
	t.Run("exact 1024-token completions", func(t *testing.T) {
		run := runSimBlock(t, rn, blockOpts{requests: 8, maxTokens: 1024, workloadAttrs: fixture(387)})
		if run.res.Status != engine.StatusSucceeded {
			t.Fatalf("status %s class %s: %s", run.res.Status, run.res.Class, run.res.Message)
		}
		checkEvidence(t, run, 8)
		for _, r := range run.records {
			if r.Outcome != loadgen.OK || r.Usage.CompletionTokens != 1024 || r.Usage.PromptTokens != 387 {
				t.Errorf("%s: %s %q usage %+v", r.ID, r.Outcome, r.Error, r.Usage)
			}
		}
	})
	t.Run("a contradicted assertion is its own outcome, kept", func(t *testing.T) {
		run := runSimBlock(t, rn, blockOpts{requests: 8, maxTokens: 1024, workloadAttrs: fixture(7037)})
		if run.res.Status != engine.StatusFailed || run.res.Class != engine.ClassRecord {
			t.Fatalf("status %s class %s, want failed/record: %s", run.res.Status, run.res.Class, run.res.Message)
		}
		if want := "8 of 8 requests failed (assertion_failed=8)"; !strings.Contains(run.res.Message, want) {
			t.Errorf("message %q lacks %q", run.res.Message, want)
		}
		checkEvidence(t, run, 8)
		r := run.result
		if r.Outcomes[loadgen.AssertionFailed] != 8 || r.VisibleSuccesses != 0 || r.Failures.Requests != 8 || r.Requests != 8 {
			t.Errorf("outcomes %v visible %d failures %d", r.Outcomes, r.VisibleSuccesses, r.Failures.Requests)
		}
		if e := run.records[0].Error; e != "usage.prompt_tokens 387, asserted 7037" {
			t.Errorf("error %q", e)
		}
	})
	t.Run("a setting of the wrong type is refused", func(t *testing.T) {
		for name, v := range map[string]cty.Value{
			"ignore_eos":           cty.StringVal("yes"),
			"min_tokens":           cty.NumberFloatVal(1.5),
			"assert_prompt_tokens": cty.NumberIntVal(0),
		} {
			run := runSimBlock(t, rn, blockOpts{requests: 2, workloadAttrs: map[string]cty.Value{name: v}})
			if run.res.Class != engine.ClassConfig || !strings.Contains(run.res.Message, "workload "+name) {
				t.Errorf("%s = %#v: class %s %q", name, v, run.res.Class, run.res.Message)
			}
			if len(run.records) != 0 {
				t.Errorf("%s: %d requests sent", name, len(run.records))
			}
		}
	})
	t.Run("min_tokens above max_tokens is refused before sending", func(t *testing.T) {
		run := runSimBlock(t, rn, blockOpts{requests: 2, maxTokens: 8, workloadAttrs: map[string]cty.Value{"min_tokens": cty.NumberIntVal(9)}})
		if run.res.Class != engine.ClassConfig || !strings.Contains(run.res.Message, fmt.Sprintf("min_tokens %d: want >= 0 and <= max_tokens", 9)) {
			t.Errorf("class %s %q", run.res.Class, run.res.Message)
		}
	})
}
