package loadgen

import (
	"math"
	"slices"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestFormulas(t *testing.T) {
	cases := map[string]struct {
		got    func() (float64, bool)
		want   float64
		wantOK bool
	}{
		// Seed 003: prompt 7682 at TTFO ~840 ms is ~9.1K tok/s effective prefill.
		"effective prefill seed 003": {func() (float64, bool) { return EffectivePrefill(7682, 840) }, 7682 / 0.84, true},
		"effective prefill no ttfo":  {func() (float64, bool) { return EffectivePrefill(7682, 0) }, 0, false},
		// (5000 − 1000) ms over 400 tokens after the first = 10 ms.
		"capacity tpot":              {func() (float64, bool) { return CapacityTPOT(5000, 1000, 401) }, 10, true},
		"tpot needs two tokens":      {func() (float64, bool) { return CapacityTPOT(5000, 1000, 1) }, 0, false},
		"tpot needs a positive span": {func() (float64, bool) { return CapacityTPOT(1000, 1000, 5) }, 0, false},
		"ttfo from schedule": {func() (float64, bool) {
			return TTFOMillis(Record{ScheduledAtMS: f(100), SendAtMS: f(130), TTFOAtMS: f(940)})
		}, 840, true},
		"visible ttft": {func() (float64, bool) {
			return VisibleTTFTMillis(Record{ScheduledAtMS: f(100), TTFTVisibleAtMS: f(3751.5)})
		}, 3651.5, true},
		"e2e is last token minus scheduled, not send, not end": {func() (float64, bool) {
			return E2EMillis(Record{ScheduledAtMS: f(100), SendAtMS: f(400), LastTokenAtMS: f(4551.5), EndAtMS: f(4700)})
		}, 4451.5, true},
		"e2e absent without a token": {func() (float64, bool) { return E2EMillis(Record{ScheduledAtMS: f(1), EndAtMS: f(9)}) }, 0, false},
		"stream end is end minus scheduled": {func() (float64, bool) {
			return StreamEndMillis(Record{ScheduledAtMS: f(100), SendAtMS: f(400), LastTokenAtMS: f(4551.5), EndAtMS: f(4700)})
		}, 4600, true},
		"stream end absent without end": {func() (float64, bool) { return StreamEndMillis(Record{ScheduledAtMS: f(1)}) }, 0, false},
		// Seed 003 c1 row: tpot 12.8747 ms <-> decode 77.669 tok/s.
		"decode is 1000/tpot": {func() (float64, bool) {
			return DecodeTokPerS(Record{TTFOAtMS: f(1000), LastTokenAtMS: f(1000 + 12.874706748010258*228), Usage: &Usage{CompletionTokens: 229}})
		}, 1000 / 12.874706748010258, true},
		"prefill from record": {func() (float64, bool) {
			return EffectivePrefillTokPerS(Record{ScheduledAtMS: f(0), TTFOAtMS: f(1516.1379399942234), Usage: &Usage{PromptTokens: 7682}})
		}, 7682 / 1.5161379399942234, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := tc.got()
			if ok != tc.wantOK || (ok && !near(got, tc.want)) {
				t.Errorf("got %v, %v; want %v, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if v, _ := EffectivePrefill(7682, 840); math.Round(v) != 9145 {
		t.Errorf("7682 / 0.840 s = %.1f, want ≈ 9145", v)
	}
}

func TestPercentiles(t *testing.T) {
	cases := map[string]struct {
		xs            []float64
		p50, p95, p99 float64
	}{
		"odd count":      {[]float64{5, 1, 4, 2, 3}, 3, 4.8, 4.96},
		"two samples":    {[]float64{20, 10}, 15, 19.5, 19.9},
		"single sample":  {[]float64{7}, 7, 7, 7},
		"1..100":         {seq(100), 50.5, 95.05, 99.01},
		"ties preserved": {[]float64{1, 1, 1, 10}, 1, 8.65, 9.73},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := Summarise(tc.xs)
			if d.Samples != len(tc.xs) || !near(*d.P50, tc.p50) || !near(*d.P95, tc.p95) || !near(*d.P99, tc.p99) {
				t.Errorf("got n=%d p50 %v p95 %v p99 %v; want %v %v %v", d.Samples, *d.P50, *d.P95, *d.P99, tc.p50, tc.p95, tc.p99)
			}
			if !d.Descriptive {
				t.Errorf("%d samples certify every percentile; a p99 needs 662", len(tc.xs))
			}
		})
	}
	if d := Summarise(nil); d.Samples != 0 || d.P50 != nil || !d.Descriptive {
		t.Errorf("empty: %+v, want null percentiles", d)
	}
}

// TestDescriptivePerPercentile: each percentile is descriptive below its own
// certified count (stats.CertifiedMin at 99%: 11 for p50, 130 for p95, 662 for
// p99), not below one count for the whole distribution. By hand for p95 at n = 129
// and 130: 0.95^n + n·0.05·0.95^(n−1) = 0.01042 and 0.00997 against 0.01.
func TestDescriptivePerPercentile(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []string
	}{
		{0, []string{"p50", "p95", "p99"}},
		{10, []string{"p50", "p95", "p99"}},
		{11, []string{"p95", "p99"}},
		{88, []string{"p95", "p99"}},
		{129, []string{"p95", "p99"}},
		{130, []string{"p99"}},
		{661, []string{"p99"}},
		{662, []string{}},
	} {
		d := Summarise(seq(tc.n))
		if !slices.Equal(d.DescriptivePercentiles, tc.want) || d.Descriptive != (len(tc.want) > 0) {
			t.Errorf("n=%d: descriptive %v %v, want %v", tc.n, d.Descriptive, d.DescriptivePercentiles, tc.want)
		}
	}
	st := Describe(seq(88), []float64{50, 90, 95, 99})
	for i, want := range []bool{false, false, true, true} {
		if st.Percentiles[i].Descriptive != want {
			t.Errorf("Describe over 88: p%v descriptive %v, want %v (p90 is certified from 64)", st.Percentiles[i].P, st.Percentiles[i].Descriptive, want)
		}
	}
	if !st.Descriptive {
		t.Error("Describe over 88: some percentile is descriptive, so the stats are")
	}
}

func seq(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i + 1)
	}
	return out
}

func TestBlockFigures(t *testing.T) {
	recs := []Record{
		{Concurrency: 4, Outcome: OK, ScheduledAtMS: f(0), SendAtMS: f(0), LastTokenAtMS: f(3990), EndAtMS: f(4000), Usage: &Usage{CompletionTokens: 300}},
		{Concurrency: 4, Outcome: OK, ScheduledAtMS: f(0), SendAtMS: f(1), LastTokenAtMS: f(5990), EndAtMS: f(6000), Usage: &Usage{CompletionTokens: 200}},
		// reasoning-only length exhaustion: a complete stream, so its tokens count
		{Concurrency: 4, Outcome: NoVisibleOutput, ScheduledAtMS: f(4000), SendAtMS: f(4000), LastTokenAtMS: f(9990), EndAtMS: f(10000), Usage: &Usage{CompletionTokens: 100}},
		{Concurrency: 4, Outcome: HTTPError, ScheduledAtMS: f(6000), SendAtMS: f(6000), EndAtMS: f(6002)},
	}
	res := Summarize(recs)
	if !near(res.WallS, 10) || !near(res.AggregateOutputTokS, 60) {
		t.Errorf("wall %v s, aggregate %v tok/s; want 10 and 600/10 = 60", res.WallS, res.AggregateOutputTokS)
	}
	if res.FailedOutputTokens != 0 || res.FailedOutputTokS != 0 {
		t.Errorf("failed output %d tokens, %v tok/s; the HTTP error streamed nothing", res.FailedOutputTokens, res.FailedOutputTokS)
	}
	// Seed 001: pilot of 16 requests at C4 taking 12 s -> ceil(120 / (12/16)) = 160.
	if spr := SecondsPerRequest(12, 16); !near(120/spr, 160) {
		t.Errorf("120/seconds_per_request = %v, want 160", 120/spr)
	}
	if !near(res.SecondsPerRequest, 2.5) || !near(res.SlotSecondsPerRequest, 10) {
		t.Errorf("seconds_per_request %v slot %v; want 10/4 = 2.5 and 2.5×4 = 10", res.SecondsPerRequest, res.SlotSecondsPerRequest)
	}
	if res.MaxConcurrencyObserved != 2 {
		t.Errorf("max concurrency = %d, want 2 (request 3 starts when request 1 ends)", res.MaxConcurrencyObserved)
	}
	if res.Outcomes[Timeout] != 0 || len(res.Outcomes) != len(Outcomes()) {
		t.Errorf("outcome table %v must list every class", res.Outcomes)
	}
	// E2E ends at the last token; the HTTP error streamed none, so it has a stream end
	// and no E2E.
	if res.Successes.E2EMS.Samples != 2 || !near(*res.Successes.E2EMS.P50, 4990) || res.Failures.E2EMS.Samples != 1 {
		t.Errorf("success e2e %+v / failure samples %d", res.Successes.E2EMS, res.Failures.E2EMS.Samples)
	}
	if res.Successes.StreamEndMS.Samples != 2 || !near(*res.Successes.StreamEndMS.P50, 5000) || res.Failures.StreamEndMS.Samples != 2 {
		t.Errorf("success stream end %+v / failure samples %d", res.Successes.StreamEndMS, res.Failures.StreamEndMS.Samples)
	}
}

// TestFailedOutputTokens holds tokens streamed by requests that later failed apart
// from the aggregate throughput, counted from usage where the request reported it and
// from its token chunks otherwise, over the same wall time.
func TestFailedOutputTokens(t *testing.T) {
	recs := []Record{
		{Outcome: OK, ScheduledAtMS: f(0), EndAtMS: f(2000), TokenChunks: 100, Usage: &Usage{CompletionTokens: 100}},
		// cut after 30 chunks, no usage: counted as 30, a lower bound
		{Outcome: StreamError, ScheduledAtMS: f(0), EndAtMS: f(1000), TokenChunks: 30},
		// aborted by the server with usage: 44 tokens, exactly
		{Outcome: StreamError, ScheduledAtMS: f(0), EndAtMS: f(1500), TokenChunks: 11, Usage: &Usage{CompletionTokens: 44}},
		// timed out after 6 chunks
		{Outcome: Timeout, ScheduledAtMS: f(0), EndAtMS: f(4000), TokenChunks: 6},
		{Outcome: Cancelled, ScheduledAtMS: f(0)},
	}
	res := Summarize(recs)
	if !near(res.WallS, 4) || !near(res.AggregateOutputTokS, 25) {
		t.Errorf("wall %v s, aggregate %v tok/s; want 4 s and 100/4 = 25", res.WallS, res.AggregateOutputTokS)
	}
	if res.FailedOutputTokens != 80 || res.FailedOutputTokensFromChunks != 2 || !near(res.FailedOutputTokS, 20) {
		t.Errorf("failed output %d tokens (%d from chunks), %v tok/s; want 30+44+6 = 80, 2, 80/4 = 20",
			res.FailedOutputTokens, res.FailedOutputTokensFromChunks, res.FailedOutputTokS)
	}
}

func TestMaxConcurrency(t *testing.T) {
	recs := []Record{
		{SendAtMS: f(0), EndAtMS: f(10)},
		{SendAtMS: f(10), EndAtMS: f(20)}, // back-to-back: not overlapping
		{SendAtMS: f(5), EndAtMS: f(15)},
		{SendAtMS: f(6)}, // cancelled without end: in flight to the end
		{},               // never sent
	}
	if got := MaxConcurrency(recs); got != 3 {
		t.Errorf("MaxConcurrency = %d, want 3", got)
	}
}

func TestTally(t *testing.T) {
	now := time.Unix(0, 0)
	tl := &Tally{Total: 3, now: func() time.Time { return now }}
	tl.start = now
	u := func(n int) *Usage { return &Usage{CompletionTokens: n} }
	now = now.Add(time.Second)
	if !tl.Add(Record{Outcome: OK, Usage: u(100)}) {
		t.Error("first record after 1 s not reported")
	}
	if tl.Add(Record{Outcome: NoVisibleOutput, Usage: u(50)}) {
		t.Error("second record within 100 ms reported")
	}
	now = now.Add(time.Second)
	if !tl.Add(Record{Outcome: HTTPError}) {
		t.Error("last record not reported")
	}
	if tl.Done != 3 || tl.Failed != 2 || tl.Tokens != 150 {
		t.Errorf("done %d failed %d tokens %d, want 3 2 150", tl.Done, tl.Failed, tl.Tokens)
	}
	if got := tl.Rate(); got != "75 tok/s" {
		t.Errorf("rate %q, want 75 tok/s (150 tokens in 2 s)", got)
	}
}
