package report

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

// TestAggregateThroughputIsTheBlocksOwn: the report's aggregate output tok/s of a
// block is the figure the block's result.json holds (loadgen's): completed
// requests' tokens over the block wall time. A failed request that still reported
// usage (an assertion failure: a complete stream of the wrong length) is not in it.
func TestAggregateThroughputIsTheBlocksOwn(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	recs := []loadgen.Record{
		{Index: 0, Outcome: loadgen.OK, ScheduledAtMS: f(0), EndAtMS: f(800), Usage: &loadgen.Usage{PromptTokens: 10, CompletionTokens: 100}},
		{Index: 1, Outcome: loadgen.OK, ScheduledAtMS: f(0), EndAtMS: f(1000), Usage: &loadgen.Usage{PromptTokens: 10, CompletionTokens: 120}},
		{Index: 2, Outcome: loadgen.AssertionFailed, ScheduledAtMS: f(0), EndAtMS: f(900), Usage: &loadgen.Usage{PromptTokens: 10, CompletionTokens: 500}},
	}
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(out)
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()
	st, err := scanBlock(dir, "requests.jsonl", "block.b")
	if err != nil {
		t.Fatal(err)
	}
	want := loadgen.AggregateOutputTokPerS(recs, st.WallS())
	if got := st.AggregateTokS(); got != want || got != 220 {
		t.Errorf("report %g tok/s, loadgen %g tok/s over %g s; want both 220 (the failed request's 500 tokens apart)", got, want, st.WallS())
	}
	if st.Completion != 720 {
		t.Errorf("all completion tokens %d, want 720 (energy and the engine's counter count them all)", st.Completion)
	}
}
