package report

import (
	"encoding/json"
	"testing"

	"github.com/rigor-bench/rigor/engine"
)

// A primary cell needs its gain to reach min_gain; a protected cell may regress by
// at most max_protected_regression, and no more: a gain of -4% breaks a 3% bound.
func TestCriterionHolds(t *testing.T) {
	cases := []struct {
		role      string
		threshold float64
		gain      float64
		want      bool
	}{
		{"primary", 0.05, 0.06, true},
		{"primary", 0.05, 0.05, true},
		{"primary", 0.05, 0.04, false},
		{"primary", 0.05, -0.06, false},
		{"protected", 0.03, 0.01, true},
		{"protected", 0.03, -0.02, true},
		{"protected", 0.03, -0.03, true},
		{"protected", 0.03, -0.04, false},
	}
	for _, c := range cases {
		if got := criterionHolds(c.role, c.threshold, c.gain); got != c.want {
			t.Errorf("%s cell, threshold %v, gain %v: holds %v, want %v", c.role, c.threshold, c.gain, got, c.want)
		}
	}
}

// A block is judged by the last client calibration settled before it: a failed one
// after a passed one makes client_timing fail, and one after the block does not count.
func TestLastCalibrationBeforeTheBlock(t *testing.T) {
	cal := func(seq int, passed bool, p99 float64) engine.Record {
		out, _ := json.Marshal(map[string]any{"passed": passed, "ttft_error_p50_ms": 0.2, "ttft_error_p99_ms": p99, "tpot_error_p99_ms": 0.1})
		return engine.Record{Seq: seq, Kind: engine.KindStepEnd, Step: "calibrate.client", Outputs: out}
	}
	ev := &evidence{records: []engine.Record{cal(3, true, 0.5), cal(7, false, 9.5), cal(12, true, 0.4)}}
	if c := ev.lastCalibration(2); c != nil {
		t.Errorf("before any calibration: got %+v, want none", c)
	}
	if c := ev.lastCalibration(5); c == nil || !c.passed || c.ttftP99 != 0.5 {
		t.Errorf("block at record 5: got %+v, want the passed calibration of record 3", c)
	}
	if c := ev.lastCalibration(10); c == nil || c.passed || c.ttftP99 != 9.5 || c.step != "calibrate.client" {
		t.Errorf("block at record 10: got %+v, want the failed calibration of record 7", c)
	}
}
