package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/stats"
)

// blockAgg recomputes a block's aggregate throughput from its raw records with
// loadgen.Summarize, independently of the report's streaming code.
func blockAgg(t *testing.T, state, cell string, rep int) float64 {
	t.Helper()
	fh, err := os.Open(filepath.Join("testdata", "states", state, "attempts", "block.primary", cell, "r"+itoa(rep), "1", "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	recs, err := loadgen.ReadRecords(fh)
	if err != nil {
		t.Fatal(err)
	}
	return loadgen.Summarize(recs).AggregateOutputTokS
}

// recomputeGains is the verdict redone by hand from the records: per repetition,
// candidate / mean(incumbent before, incumbent after) - 1.
func recomputeGains(t *testing.T, state, cell string, reps int) []float64 {
	var gains []float64
	for r := 1; r <= reps; r++ {
		b, a := blockAgg(t, state, "incumbent_before/"+cell, r), blockAgg(t, state, "incumbent_after/"+cell, r)
		gains = append(gains, blockAgg(t, state, "candidate/"+cell, r)/((b+a)/2)-1)
	}
	return gains
}

// TestVerdictFasterLowNoise: the candidate is about 10% faster (the incumbent runs
// every delay × 1.1) and every request generates 64 tokens: promoted under the
// interval criterion, and the interval is the t-interval of the gains redone from
// the raw records.
func TestVerdictFasterLowNoise(t *testing.T) {
	r := build(t, "verdict-faster")
	v := r.Summary.Promotion
	if !v.Promoted || v.Criterion != plans.CriterionInterval || len(v.Comparisons) != 1 {
		t.Fatalf("want promoted under the interval criterion: %+v", v)
	}
	c := v.Comparisons[0]
	gains := recomputeGains(t, "verdict-faster", "c2", 4)
	want, _ := stats.TInterval(gains, 0.95)
	if d := cmp.Diff(&want, c.Interval, cmpopts.EquateApprox(0, 1e-12)); d != "" {
		t.Fatalf("interval (-recomputed +report):\n%s", d)
	}
	if c.Interval.Lo < 0.05 || math.Abs(*c.Gain-0.10) > 0.03 || c.Decided != "interval lower bound of the gain" || *c.DecidingValue != c.Interval.Lo {
		t.Errorf("gain %v interval [%v, %v] decided by %q", *c.Gain, c.Interval.Lo, c.Interval.Hi, c.Decided)
	}
	if c.Drift == nil || c.Drift.Exceeds || math.Abs(*c.Drift.Mean) > 0.05 {
		t.Errorf("no drift was injected: %+v", c.Drift)
	}
	// The first screen (the lines before the result card) shows the verdict, the
	// effect with its interval, the drift, the validity checks and the energy.
	md := string(r.document(nil).markdown())
	first := md[:strings.Index(md, "## Result card")]
	for _, w := range []string{"Promoted: every pre-registered criterion holds", pm(*c.Gain) + " [" + pm(c.Interval.Lo) + ", " + pm(c.Interval.Hi) + "] (t, n = 4)",
		"Drift after/before", pm(*c.Drift.Mean), ": mean within max ", "12/12 blocks pass", "Energy J/output token", "(simulated)", "minimum detectable effect"} {
		if !strings.Contains(first, w) {
			t.Errorf("first screen lacks %q:\n%s", w, first)
		}
	}
	if n := strings.Count(first, "\n"); n > 40 {
		t.Errorf("the first screen is %d lines", n)
	}
	// The energy column shows the incumbent as the verdict does: before / after.
	e := func(f *CellFigure) string { return fmtF(r.rows[f.CellID].Energy.JoulesPerOutputToken, 3) }
	if w := "| " + e(c.Baseline) + " / " + e(c.After) + " → " + e(c.Candidate) + " (simulated) |"; c.After == nil || !strings.Contains(first, w) {
		t.Errorf("the energy column lacks %q", w)
	}
}

// TestVerdictNoisyStraddles: the same effect with natural output and few requests
// per block: the mean gain reaches 5% but the interval's lower bound does not. Not
// promoted under "interval", promoted under "point", and the report says why.
func TestVerdictNoisyStraddles(t *testing.T) {
	r := build(t, "verdict-noisy")
	v := r.Summary.Promotion
	c := v.Comparisons[0]
	if v.Promoted || !c.Eligible || *c.Gain < 0.05 || c.Interval.Lo >= 0.05 || !*c.HoldsPoint || *c.HoldsInterval {
		t.Fatalf("want a straddling interval: gain %v, interval %+v, promoted %v", *c.Gain, c.Interval, v.Promoted)
	}
	gains := recomputeGains(t, "verdict-noisy", "c2", 4)
	if math.Abs(stats.Mean(gains)-*c.Gain) > 1e-12 {
		t.Errorf("mean gain %v, recomputed %v", *c.Gain, stats.Mean(gains))
	}
	why := strings.Join(v.Reasons, "\n")
	if !strings.Contains(why, `criterion "point" would hold and criterion "interval" does not`) {
		t.Errorf("the report must say why the criteria differ:\n%s", why)
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "| yes | no | interval lower bound of the gain = "+pm(c.Interval.Lo)+" | no |") {
		t.Error("the verdict table must show that point would hold, interval would not, and which bound decided")
	}
	// The same evidence under the point criterion: promoted.
	r.ev.plan.Campaign.Decision.Criterion = plans.CriterionPoint
	p := r.ev.decide(r.rows)
	if !p.Promoted || p.Comparisons[0].Decided != "mean gain" {
		t.Fatalf("under criterion point the same evidence promotes: %+v", p)
	}
	if c := p.Comparisons[0].Criterion; !strings.HasPrefix(c, "mean of the gain ≥ ") {
		t.Errorf("criterion under point reads %q; want it to start %q", c, "mean of the gain ≥ ")
	}
	if !strings.Contains(strings.Join(p.Reasons, "\n"), "the point estimate meets the rule but the interval does not") {
		t.Errorf("under point, the report still says the interval does not hold: %v", p.Reasons)
	}
}

// TestVerdictDriftIneligible: the incumbent is slowed × 1.3 through /debug/faults
// between its before and after arms (same container, same incarnation). The drift
// makes the comparison ineligible, and the run-order chart shows the after arm's
// blocks below the before arm's.
func TestVerdictDriftIneligible(t *testing.T) {
	r := build(t, "verdict-drift")
	v := r.Summary.Promotion
	c := v.Comparisons[0]
	if v.Promoted || v.Eligible || c.Drift == nil || !c.Drift.Exceeds || *c.Drift.Mean > -0.15 {
		t.Fatalf("want ineligible by drift: %+v", c.Drift)
	}
	if !strings.Contains(c.Ineligible, "drift of "+pm(*c.Drift.Mean)+" between incumbent_before and incumbent_after exceeds what the rule can resolve") {
		t.Errorf("reason %q", c.Ineligible)
	}
	// Drift redone from the records: after/before - 1 per repetition.
	var d []float64
	for rep := 1; rep <= 4; rep++ {
		d = append(d, blockAgg(t, "verdict-drift", "incumbent_after/c2", rep)/blockAgg(t, "verdict-drift", "incumbent_before/c2", rep)-1)
	}
	if math.Abs(stats.Mean(d)-*c.Drift.Mean) > 1e-12 {
		t.Errorf("drift %v, recomputed %v", *c.Drift.Mean, stats.Mean(d))
	}
	// The identity of the drifted arm is unchanged: the same container incarnation.
	if len(r.Summary.Statistics.Drift) != 1 || !r.Summary.Statistics.Drift[0].Exceeds {
		t.Errorf("statistics.drift %+v", r.Summary.Statistics.Drift)
	}
	pts := r.runOrder("aggregate_output_tok_s")
	var after, before []float64
	for _, p := range pts {
		switch p.arm {
		case "incumbent_after":
			after = append(after, *p.rel)
		case "incumbent_before":
			before = append(before, *p.rel)
		}
	}
	if len(after) != 4 || slices.Max(after) > -0.15 || slices.Min(before) < -0.05 {
		t.Errorf("run order: before %v, after %v", before, after)
	}
	out := t.TempDir()
	files, err := Generate(Options{State: filepath.Join("testdata", "states", "verdict-drift"), Out: out, Format: "md", Charts: true})
	if err != nil || !slices.Contains(files, "charts/noise_drift.svg") {
		t.Fatalf("charts %v, %v", files, err)
	}
	svg, _ := os.ReadFile(filepath.Join(out, "charts", "noise_drift.svg"))
	// One panel per concurrency (C2 here), a legend entry per arm.
	for _, w := range []string{">C2</text>", ">incumbent_before</text>", ">candidate</text>", ">incumbent_after</text>", "run order"} {
		if !strings.Contains(string(svg), w) {
			t.Errorf("noise_drift.svg lacks %q", w)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "## Noise and drift") || !strings.Contains(string(md), "charts/noise_drift.png") {
		t.Error("report.md must have a Noise and drift section with its chart")
	}
}

// editedNativeDeltas builds a copy of the verdict-faster state whose candidate/c2
// block of repetition rep has its native-deltas.json edited by edit.
func editedNativeDeltas(t *testing.T, rep string, edit func(nd map[string]any)) *Report {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "states", "verdict-faster"), dir)
	p := filepath.Join(dir, "attempts", "block.primary", "candidate", "c2", rep, "1", "native-deltas.json")
	var nd map[string]any
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &nd); err != nil {
		t.Fatal(err)
	}
	edit(nd)
	b, _ = json.Marshal(nd)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// moreGenerationTokens inflates the engine's generation-token count by half: no
// rounding explains it, so the block's counts check fails.
func moreGenerationTokens(nd map[string]any) {
	nd["generation_tokens"] = nd["generation_tokens"].(float64) * 1.5
}

// TestInvalidBlockCannotSupportAVerdict: a candidate block whose client and native
// token counts disagree fails its validity check, and the comparison is ineligible.
func TestInvalidBlockCannotSupportAVerdict(t *testing.T) {
	r := editedNativeDeltas(t, "r2", moreGenerationTokens)
	c := r.Summary.Promotion.Comparisons[0]
	if c.Eligible || !strings.Contains(c.Ineligible, "candidate/c2/r2 fails validity: counts: generation tokens client") {
		t.Fatalf("want ineligible by a failed validity check: %q", c.Ineligible)
	}
	if r.Summary.Statistics.Validity.BlocksFailed != 1 {
		t.Errorf("validity %+v", r.Summary.Statistics.Validity)
	}
}

// TestInvalidBlockBeyondTheComparedRepetitions: a rule that compares the first 3
// repetitions cannot be promoted when the cell's 4th block failed a validity check:
// every measured block of a compared cell must pass.
func TestInvalidBlockBeyondTheComparedRepetitions(t *testing.T) {
	r := editedNativeDeltas(t, "r4", moreGenerationTokens)
	r.ev.plan.Campaign.Decision.MatchedRepetitions = 3
	v := r.ev.decide(r.rows)
	if v.Promoted || v.Eligible || !strings.Contains(v.Comparisons[0].Ineligible, "candidate/c2/r4 fails validity: counts: generation tokens client") {
		t.Fatalf("promoted %v, eligible %v (%q); a failed 4th block must make the comparison ineligible", v.Promoted, v.Eligible, v.Comparisons[0].Ineligible)
	}
}

// TestCountMismatchFailsValidity: a block whose client prompt-token count or
// finish-reason counts disagree with the engine's own counters fails its counts
// check; the comparison is then ineligible, the cell's validity shows the block
// failed, and the report prints the reason.
func TestCountMismatchFailsValidity(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(nd map[string]any)
		want string
	}{
		// The client counted 169,026 prompt tokens; 1.5 times that is no rounding.
		"prompt tokens": {func(nd map[string]any) { nd["prompt_tokens"] = nd["prompt_tokens"].(float64) * 1.5 },
			"candidate/c2/r2 fails validity: counts: prompt tokens client 169,026 / native 253,539"},
		// The client saw 22 requests end by length and none by stop; the engine says
		// one of them stopped.
		"finish reason": {func(nd map[string]any) {
			fr := nd["request_success_by_finished_reason"].(map[string]any)
			fr["length"], fr["stop"] = 21.0, 1.0
		}, "candidate/c2/r2 fails validity: counts: finish stop client 0 / native 1; finish length client 22 / native 21"},
	} {
		t.Run(name, func(t *testing.T) {
			r := editedNativeDeltas(t, "r2", tc.edit)
			c := r.Summary.Promotion.Comparisons[0]
			if c.Eligible || !strings.Contains(c.Ineligible, tc.want) {
				t.Fatalf("ineligible %q, want it to contain %q", c.Ineligible, tc.want)
			}
			if v := r.Summary.Statistics.Validity; v.BlocksFailed != 1 {
				t.Errorf("validity %+v, want one failed block", v)
			}
			out := t.TempDir()
			if _, err := r.Write(Options{State: r.ev.dir, Out: out, Format: "md"}); err != nil {
				t.Fatal(err)
			}
			md, err := os.ReadFile(filepath.Join(out, "report.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(md), tc.want) {
				t.Errorf("report.md does not print %q", tc.want)
			}
		})
	}
}

// TestStreamTailFailsE2E: a stream that ends 400 ms after its last token (a server
// that holds [DONE] back) breaks E2E = TTFO + TPOT·(n-1); the block fails validity
// and the comparison is ineligible, saying by how much.
func TestStreamTailFailsE2E(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "states", "verdict-faster"), dir)
	p := filepath.Join(dir, "attempts", "block.primary", "candidate", "c2", "r2", "1", "requests.jsonl")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	rec["end_at_ms"] = rec["last_token_at_ms"].(float64) + 400
	first, _ := json.Marshal(rec)
	lines[0] = string(first)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	const want = "e2e_identity: 1 of 21 requests off by more than 2 ms or 2.00%; largest difference 400.000 ms"
	if c := r.Summary.Promotion.Comparisons[0]; c.Eligible || !strings.Contains(c.Ineligible, want) {
		t.Fatalf("ineligible %q, want it to contain %q", c.Ineligible, want)
	}
}

// TestRuleMetrics: a percentile below its certified count never enters a rule; an
// energy rule compares joules per output token block by block.
func TestRuleMetrics(t *testing.T) {
	r := build(t, "verdict-faster")
	r.ev.plan.Campaign.Decision.PrimaryMetric = "ttft_p95_ms"
	v := r.ev.decide(r.rows)
	if v.Eligible || !strings.Contains(v.Comparisons[0].Ineligible, "p95 over 22 samples is descriptive: 130 certify it") {
		t.Errorf("p95 of 22 samples must not decide: %q", v.Comparisons[0].Ineligible)
	}
	// A block median too: over 22 samples it is certified (11 are needed) and
	// decides; over the clean state's 6-request C1 blocks it is descriptive.
	r.ev.plan.Campaign.Decision.PrimaryMetric = "ttft_ms_p50"
	if v := r.ev.decide(r.rows); strings.Contains(v.Comparisons[0].Ineligible, "descriptive") {
		t.Errorf("p50 of 22 samples must decide: %q", v.Comparisons[0].Ineligible)
	}
	small := build(t, "clean")
	small.ev.plan.Campaign.Decision.PrimaryMetric = "ttft_ms_p50"
	small.ev.plan.Campaign.Decision.PrimaryCells = []string{"c1"}
	if v := small.ev.decide(small.rows); v.Eligible || !strings.Contains(v.Comparisons[0].Ineligible, "p50 over 6 samples is descriptive: 11 certify it") {
		t.Errorf("p50 of 6 samples must not decide: %q", v.Comparisons[0].Ineligible)
	}
	r.ev.plan.Campaign.Decision.PrimaryMetric = "joules_per_output_token"
	v = r.ev.decide(r.rows)
	c := v.Comparisons[0]
	// The simulated GPUs' power follows a 7 s cycle, not the load, so energy per
	// token drifts between the incumbent arms: the pairs are computed and stated,
	// and the drift bound decides eligibility as for any metric.
	if len(c.Pairs) != 4 || c.HigherIsBetter || c.Drift == nil || c.Eligible == c.Drift.Exceeds {
		t.Fatalf("energy comparison: %+v", c)
	}
	cand := r.rows["primary/candidate/c2"].Energy
	mean := 0.0
	for _, p := range c.Pairs {
		mean += p.Candidate / 4
	}
	if math.Abs(mean-cand.JoulesPerOutputToken) > 1e-12 || !cand.Simulated {
		t.Errorf("candidate J/token %v, cell energy %+v", mean, cand)
	}
	// A block with enough samples certifies its percentile: 200 successes ≥ 130.
	st := &blockStats{}
	for i := range 200 {
		st.vals[mTTFT] = append(st.vals[mTTFT], float64(i+1))
	}
	if x, why := blockMetric(&attemptRef{stats: st}, "ttft_p95_ms"); why != "" || math.Abs(x-190.05) > 1e-9 { // type 7: 1 + 0.95·199
		t.Errorf("certified p95 = %v (%s), want 190.05", x, why)
	}
}

// TestEnergyIntegration: the trapezoid over linearly interpolated samples, by hand.
func TestEnergyIntegration(t *testing.T) {
	t0 := time.Date(2026, 10, 22, 2, 0, 0, 0, time.UTC)
	w := func(s float64, p float64) gpuSample {
		return gpuSample{T: t0.Add(time.Duration(s * float64(time.Second))), HasT: true, Power: &p, Device: "0"}
	}
	ss := []gpuSample{w(0, 100), w(1, 200), w(2, 200)}
	sec := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cases := map[string]struct {
		from, to      float64
		joules, cover float64
		mean, peak    float64
	}{
		// Power at 0.5 s is 150 W (interpolated): 0.5·(150+200)/2 + 0.5·(200+200)/2 = 187.5 J.
		"inside the samples": {0.5, 1.5, 187.5, 1, 187.5, 200},
		// Only [0, 1] is covered: 150 J over 1 s, extrapolated at 150 W to 2 s = 300 J.
		"half covered": {-1, 1, 300, 0.5, 150, 200},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			d, cov, ok := integrate("0", ss, sec(c.from), sec(c.to))
			if !ok || math.Abs(d.Joules-c.joules) > 1e-9 || math.Abs(cov-c.cover) > 1e-12 || math.Abs(d.MeanW-c.mean) > 1e-9 || d.PeakW != c.peak {
				t.Errorf("got %+v coverage %v", d, cov)
			}
		})
	}
	if _, _, ok := integrate("0", ss[:1], sec(0), sec(1)); ok {
		t.Error("one sample cannot be integrated")
	}
}

// TestPowerFromPilot: after the pilot the design's minimum detectable effect is
// stated from the pilot's batch means; a declared block_cv replaces it.
func TestPowerFromPilot(t *testing.T) {
	p, err := PowerFromState(filepath.Join("testdata", "states", "verdict-faster"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Cells) != 1 || p.Cells[0].BlockCV == nil || !p.Bracketed || p.Repetitions != 4 || !p.CandidateStarted {
		t.Fatalf("power %+v", p)
	}
	c := p.Cells[0]
	want := stats.MDE(stats.PairSD(*c.BlockCV, true), 4, 0.95, stats.Power)
	if math.Abs(*c.MDE-want) > 1e-12 || c.Resolves != (want <= 0.05) || !strings.Contains(c.Source, `batch means of block.pilot["c2"]`) {
		t.Errorf("cell %+v, MDE want %v", c, want)
	}
	n, _ := stats.RepetitionsNeeded(*c.PairSD, 0.05, 0.95, stats.Power, repLimit)
	if *c.Needed != n {
		t.Errorf("needed %d, want %d", *c.Needed, n)
	}
	text := p.String()
	if !strings.Contains(text, "minimum detectable effect of aggregate_output_tok_s") || !strings.Contains(text, pct(*c.MDE)+" with 4 repetitions") {
		t.Errorf("lines:\n%s", text)
	}
	// A declared prior: 1% block CV resolves 5% with 4 repetitions.
	ev, _ := loadEvidence(filepath.Join("testdata", "states", "verdict-faster"))
	cv := 0.01
	ev.plan.Campaign.Decision.BlockCV = &cv
	q := ev.power()
	if q.Cells[0].Source != "declared block_cv" || !q.Resolvable || q.Flag != "" {
		t.Errorf("declared prior: %+v", q.Cells[0])
	}
}

// TestRetriedBlockStaysInPopulation: a block whose attempt 1 was interrupted by a
// crash (partial requests.jsonl, no result.json) and whose attempt 2 succeeded.
// Both attempts stay in the cell's population: attempt 1's records count, the
// requests it never completed are cancelled failures, the retry is listed beside
// the cell, and the comparison is ineligible.
func TestRetriedBlockStaysInPopulation(t *testing.T) {
	dir := retriedState(t, "verdict-faster", `block.primary["candidate/c2/r1"]`, "attempts/block.primary/candidate/c2/r1", 3)
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	row := r.rows["primary/candidate/c2"]
	clean := build(t, "verdict-faster").rows["primary/candidate/c2"]
	declared := 22
	// Attempt 1 declared 22 requests and recorded 3: the population grows by 22,
	// of which 19 are cancelled failures; attempt 2 is the clean run's attempt.
	if *row.Attempted != *clean.Attempted+declared || *row.VisibleSuccesses != *clean.VisibleSuccesses+3 {
		t.Errorf("population %d/%d, clean %d/%d", *row.VisibleSuccesses, *row.Attempted, *clean.VisibleSuccesses, *clean.Attempted)
	}
	if row.Disposition != Failed || !strings.Contains(row.Reason, "r1 attempt 1 interrupted (crash): 19 of 22 requests failed or never completed") {
		t.Errorf("disposition %s: %s", row.Disposition, row.Reason)
	}
	if len(row.Retries) != 1 || !strings.Contains(row.Retries[0], "attempt 1 interrupted (crash), 3 of 22 requests recorded; attempt 2 succeeded") {
		t.Errorf("retries %v", row.Retries)
	}
	if row.Timing != nil || row.AggregateTokS != nil {
		t.Error("a failed cell carries no headline figure")
	}
	var cancelled int
	for _, b := range row.Blocks {
		if b.Step == `block.primary["candidate/c2/r1"]` && b.Attempt == 1 {
			cancelled = b.Missing
		}
	}
	if cancelled != 19 {
		t.Errorf("attempt 1 missing requests %d, want 19", cancelled)
	}
	v := r.Summary.Promotion
	if v.Eligible || !strings.Contains(v.Comparisons[0].Ineligible, "primary/candidate/c2 has 19 failed request(s)") {
		t.Errorf("comparison: %q", v.Comparisons[0].Ineligible)
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "index 3 (no record)") || !strings.Contains(md, "attempt 1 interrupted (crash), 3 of 22 requests recorded") {
		t.Error("the report must list the never-completed requests and the retry")
	}
	// The failures section does not claim that nothing was run again.
	if strings.Contains(md, "not retried") || !strings.Contains(md, "counts the new attempt beside the failed one, never in its place") {
		t.Error("the failures section must say a block run again counts beside the failed attempt")
	}
	sj, err := r.SummaryJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(sj), `"retries": [`) {
		t.Error("summary.json must carry the retry")
	}
}

// retriedState copies a state and rewrites one block's history as a crash and a
// retry: the block's attempt becomes attempt 2, and an attempt 1 is inserted before
// it whose requests.jsonl holds the first keep records and which ended the way
// engine recovery ends a dead attempt (interrupted, class crash, artefacts hashed
// as found). The journal is re-chained with engine.Journal.
func retriedState(t *testing.T, state, step, rel string, keep int) string {
	t.Helper()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "states", state), dir)
	d1, d2 := filepath.Join(dir, filepath.FromSlash(rel), "1"), filepath.Join(dir, filepath.FromSlash(rel), "2")
	if err := os.Rename(d1, d2); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(d1, 0o755)
	b, _ := os.ReadFile(filepath.Join(d2, "requests.jsonl"))
	lines := strings.SplitAfter(string(b), "\n")
	partial := []byte(strings.Join(lines[:keep], ""))
	os.WriteFile(filepath.Join(d1, "requests.jsonl"), partial, 0o644)
	jpath := filepath.Join(dir, engine.JournalFile)
	recs, _, err := engine.ReadJournal(jpath)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(jpath)
	j, err := engine.OpenJournal(jpath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	one, two := rel+"/1", rel+"/2"
	for _, r := range recs {
		if r.Step == step && r.Attempt == 1 {
			if r.Kind == engine.KindStepStart {
				first := r
				first.Seq, first.Prev = 0, ""
				mustAppend(t, j, first)
				mustAppend(t, j, engine.Record{Kind: engine.KindStepEnd, Time: r.Time, Step: step, Attempt: 1, Dir: one,
					Status: engine.StatusInterrupted, Class: engine.ClassCrash,
					Message:   "the previous apply stopped during this attempt (crash or kill); its evidence is kept as it was",
					Artefacts: []engine.Artefact{{Path: one + "/requests.jsonl", SHA256: plans.SHA256Hex(partial), Size: int64(len(partial))}}})
			}
			r.Attempt, r.Dir = 2, two
			for i := range r.Artefacts {
				r.Artefacts[i].Path = strings.Replace(r.Artefacts[i].Path, one+"/", two+"/", 1)
			}
		}
		r.Seq, r.Prev = 0, ""
		mustAppend(t, j, r)
	}
	return dir
}

func mustAppend(t *testing.T, j *engine.Journal, r engine.Record) {
	t.Helper()
	if _, err := j.Append(r); err != nil {
		t.Fatal(err)
	}
}

// TestSchemaRejectsFailedFigures: a failed row with a headline figure does not
// validate (seed 003).
func TestSchemaRejectsFailedFigures(t *testing.T) {
	sj, _ := build(t, "failed-cell").SummaryJSON()
	var doc map[string]any
	json.Unmarshal(sj, &doc)
	found := false
	for _, x := range doc["rows"].([]any) {
		m := x.(map[string]any)
		if m["disposition"] == "failed" {
			m["aggregate_output_throughput_tok_s"] = 1.0
			found = true
			break
		}
	}
	b, _ := json.Marshal(doc)
	if !found {
		t.Fatal("no failed row")
	}
	if err := schemas.Validate("summary", b); err == nil {
		t.Error("a failed row with a headline figure validated")
	}
}

// TestLoadCheck: requested against achieved load, closed and open loop.
func TestLoadCheck(t *testing.T) {
	ev := &evidence{}
	cases := map[string]struct {
		cfg        map[string]any
		conc       int
		st         blockStats
		wantResult string
	}{
		"closed loop reached":       {map[string]any{}, 4, blockStats{Attempted: 16, MaxConc: 4}, CheckPass},
		"closed loop short":         {map[string]any{}, 4, blockStats{Attempted: 16, MaxConc: 3}, CheckFail},
		"fewer requests than slots": {map[string]any{}, 4, blockStats{Attempted: 2, MaxConc: 2}, CheckPass},
		// 11 sends over 1 s scheduled and 1 s sent: 10 req/s each.
		"open loop on schedule": {map[string]any{"mode": "open", "rate": 10.0}, 1,
			blockStats{Attempted: 11, OK: 11, SendSpanMS: [2]float64{0, 1000}, SchedSpanMS: [2]float64{0, 1000}}, CheckPass},
		// The client fell behind: 11 sends took 1.2 s against a 1 s schedule (8.33 vs 10 req/s).
		"open loop behind": {map[string]any{"mode": "open", "rate": 10.0}, 1,
			blockStats{Attempted: 11, OK: 11, SendSpanMS: [2]float64{0, 1200}, SchedSpanMS: [2]float64{0, 1000}}, CheckFail},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			st := c.st
			b := &blockRef{Addr: "block.x", Conc: c.conc, cfg: c.cfg, Target: map[string]any{}}
			v := ev.validate(b, &attemptRef{N: 1, stats: &st})
			if v.Checks[0].Name != "load" || v.Checks[0].Result != c.wantResult {
				t.Errorf("load check %+v, want %s", v.Checks[0], c.wantResult)
			}
			if v.OK != (c.wantResult == CheckPass) {
				t.Errorf("ok = %v with checks %+v", v.OK, v.Checks)
			}
		})
	}
}

// TestPilotBetweenBlocks: with two or more pilot blocks at a concurrency, their
// block-to-block variation is used directly instead of batch means.
func TestPilotBetweenBlocks(t *testing.T) {
	ev, err := loadEvidence(filepath.Join("testdata", "states", "verdict-faster"))
	if err != nil {
		t.Fatal(err)
	}
	// Two of the incumbent's measured blocks stand in for a repeated pilot.
	var figs []float64
	for _, rep := range []string{"r1", "r2"} {
		rel := "attempts/block.primary/incumbent_before/c2/" + rep + "/1/requests.jsonl"
		end := &engine.Record{Status: engine.StatusSucceeded, Attempt: 1, Dir: filepath.Dir(rel), Artefacts: []engine.Artefact{{Path: rel}}}
		b := &blockRef{Addr: "block.pilot[\"" + rep + "\"]", Phase: "pilot", Conc: 2, Target: map[string]any{"name": "incumbent"}, End: end}
		b.attempts = []*attemptRef{{N: 1, Dir: end.Dir, End: end}}
		ev.blocks = append(ev.blocks, b)
		fh, _ := os.Open(filepath.Join("testdata", "states", "verdict-faster", filepath.FromSlash(rel)))
		recs, _ := loadgen.ReadRecords(fh)
		fh.Close()
		// Σ completion tokens over the span from the first send to the last end.
		lo, hi, tok := math.Inf(1), math.Inf(-1), 0
		for _, r := range recs {
			lo, hi, tok = math.Min(lo, *r.SendAtMS), math.Max(hi, *r.EndAtMS), tok+r.Usage.CompletionTokens
		}
		figs = append(figs, float64(tok)/((hi-lo)/1000))
	}
	// Drop the real pilot so only the two stand-ins remain.
	ev.blocks = slices.DeleteFunc(ev.blocks, func(b *blockRef) bool { return b.Addr == `block.pilot["c2"]` })
	cv, src := ev.pilotCV("incumbent", 2, "aggregate_output_tok_s")
	want := stats.SD(figs) / stats.Mean(figs)
	if math.Abs(cv-want) > 1e-12 || src != "between 2 pilot blocks at C2" {
		t.Errorf("cv %v (%s), want %v from %v", cv, src, want, figs)
	}
}
