package loadgen

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestITL checks ITLMillis against hand-computed samples.
func TestITL(t *testing.T) {
	usage := func(n int) *Usage { return &Usage{CompletionTokens: n} }
	cases := map[string]struct {
		r      Record
		want   []float64
		wantOK bool
	}{
		// Chunks at 100, 110, 130 ms, one token each: gaps 10 and 20.
		"one token per chunk": {Record{TokenChunkAtMS: []float64{100, 110, 130}, Usage: usage(3)}, []float64{10, 20}, true},
		// The end-of-sequence token may be counted without being streamed.
		"one uncounted end token": {Record{TokenChunkAtMS: []float64{100, 110, 130}, Usage: usage(4)}, []float64{10, 20}, true},
		// Per-chunk usage: chunk 1 carries 2 tokens over 10 ms (5, 5), chunk 2 carries
		// 4 over 20 ms (5, 5, 5, 5): tokens, not chunks.
		"multi-token chunks": {Record{TokenChunkAtMS: []float64{100, 110, 130}, TokenChunkTokens: []int{1, 2, 4}, Usage: usage(7)},
			[]float64{5, 5, 5, 5, 5, 5}, true},
		// A first chunk of 3 tokens gives no samples of its own.
		"multi-token first chunk": {Record{TokenChunkAtMS: []float64{100, 130}, TokenChunkTokens: []int{3, 3}, Usage: usage(6)},
			[]float64{10, 10, 10}, true},
		// More tokens than chunks + 1 and no per-chunk usage: unresolved, not guessed.
		"multi-token chunks without usage": {Record{TokenChunkAtMS: []float64{100, 110, 130}, Usage: usage(9)}, nil, false},
		"a chunk that reported no token":   {Record{TokenChunkAtMS: []float64{100, 110}, TokenChunkTokens: []int{1, 0}, Usage: usage(1)}, nil, false},
		"no chunks recorded":               {Record{Usage: usage(3)}, nil, false},
		"no usage":                         {Record{TokenChunkAtMS: []float64{100, 110}}, nil, false},
		"a single chunk":                   {Record{TokenChunkAtMS: []float64{100}, Usage: usage(1)}, nil, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := ITLMillis(nil, tc.r)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("samples (-want +got):\n%s", diff)
			}
		})
	}
	// With a one-token first chunk, the mean ITL of a request is its capacity TPOT.
	r := Record{TTFOAtMS: f(100), LastTokenAtMS: f(130), TokenChunkAtMS: []float64{100, 110, 130}, TokenChunkTokens: []int{1, 2, 4}, Usage: usage(7)}
	s, _ := ITLMillis(nil, r)
	tpot, _ := TPOTMillis(r)
	if mean := Describe(s, nil).Mean; !near(*mean, tpot) {
		t.Errorf("mean ITL %v, capacity TPOT %v", *mean, tpot)
	}
}

// TestDescribe checks mean, population std, min, max and chosen percentiles against
// hand-computed values (NumPy: np.mean, np.std, np.percentile).
func TestDescribe(t *testing.T) {
	v := func(x float64) *float64 { return &x }
	cases := map[string]struct {
		xs   []float64
		ps   []float64
		want Stats
	}{
		// [2 4 4 4 5 5 7 9]: mean 5, population std 2 (np.std); type-7 p50 4.5,
		// p90 = x[6] + 0.3(x[7] − x[6]) = 7.6, p99 = 7 + 0.93·2 = 8.86.
		"textbook std": {[]float64{9, 2, 4, 4, 4, 5, 5, 7}, []float64{50, 90, 99}, Stats{
			Samples: 8, Mean: v(5), Std: v(2), Min: v(2), Max: v(9), Descriptive: true,
			Percentiles: []PercentileValue{{50, v(4.5), true}, {90, v(7.6), true}, {99, v(8.86), true}},
		}},
		"single sample": {[]float64{3}, []float64{50, 99}, Stats{
			Samples: 1, Mean: v(3), Std: v(0), Min: v(3), Max: v(3), Descriptive: true,
			Percentiles: []PercentileValue{{50, v(3), true}, {99, v(3), true}},
		}},
		"no samples": {nil, []float64{50}, Stats{Samples: 0, Descriptive: true, Percentiles: []PercentileValue{{50, nil, true}}}},
		// 1..100: p50 50.5, p95 95.05, p99.9 99.901; 100 samples certify the p50 (from
		// 11) but neither the p95 (130) nor the p99.9 (6,636).
		"1..100": {seq(100), []float64{50, 95, 99.9}, Stats{
			Samples: 100, Mean: v(50.5), Std: v(math.Sqrt((100*100 - 1) / 12.0)), Min: v(1), Max: v(100), Descriptive: true,
			Percentiles: []PercentileValue{{50, v(50.5), false}, {95, v(95.05), true}, {99.9, v(99.901), true}},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Describe(tc.xs, tc.ps)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestGoodputAndThroughput checks ComputeFigures on a hand-built block: four requests
// over 2 s of wall time, one failed.
func TestGoodputAndThroughput(t *testing.T) {
	ok := func(id string, ttft, last float64, prompt, completion int) Record {
		return Record{ID: id, Outcome: OK, ScheduledAtMS: f(0), SendAtMS: f(0), TTFOAtMS: f(ttft), TTFTVisibleAtMS: f(ttft),
			LastTokenAtMS: f(last), EndAtMS: f(last), Usage: &Usage{PromptTokens: prompt, CompletionTokens: completion}}
	}
	recs := []Record{
		// TTFT 100, TPOT (1100 − 100)/(101 − 1) = 10: meets ttft ≤ 200 and tpot ≤ 50.
		ok("a", 100, 1100, 50, 101),
		// TTFT 300: misses ttft ≤ 200.
		ok("b", 300, 1300, 50, 101),
		// TTFT 150, TPOT (1500 − 150)/(10 − 1) = 150: misses tpot ≤ 50.
		ok("c", 150, 1500, 50, 10),
		// Failed: never good, still attempted; its wall time counts (ends at 2000).
		{ID: "d", Outcome: HTTPError, ScheduledAtMS: f(0), SendAtMS: f(1000), EndAtMS: f(2000), HTTPStatus: 500, Error: "HTTP 500: x"},
	}
	fig := ComputeFigures(recs, FigureOptions{Percentiles: []float64{50}, SLOs: []SLO{{"ttft", 200}, {"tpot", 50}}})
	// Wall time 2 s: 3 ok requests → 1.5 req/s; 212 output tokens → 106 tok/s;
	// 150 + 212 = 362 tokens → 181 tok/s; goodput 1 request → 0.5 req/s, 1/4 of attempted.
	want := Figures{
		Attempted: 4, Succeeded: 3, Failed: 1, InputTokens: 150, OutputTokens: 212, WallS: 2,
		RequestThroughput: 1.5, OutputTokenThroughput: 106, TotalTokenThroughput: 181,
		Goodput: &Goodput{SLOs: []SLO{{"ttft", 200}, {"tpot", 50}}, Good: 1, Attempted: 4, Fraction: 0.25, ReqPerS: 0.5},
		Sent:    4, MaxConcurrency: 4, ITLUnresolved: 3,
	}
	got := fig
	got.TTFOMS, got.TTFTMS, got.TPOTMS, got.ITLMS, got.E2EMS, got.ScheduleLagMS, got.AchievedRequestRate = Stats{}, Stats{}, Stats{}, Stats{}, Stats{}, Stats{}, nil
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
	// TTFT over the 3 successes: 100, 150, 300 → p50 150; the failure is not a sample.
	if fig.TTFTMS.Samples != 3 || *fig.TTFTMS.Percentiles[0].Value != 150 || !near(*fig.TTFTMS.Mean, 550.0/3) {
		t.Errorf("ttft %+v", fig.TTFTMS)
	}
	// Sends at 0, 0, 0, 1000: (4 − 1) / 1 s = 3 req/s.
	if fig.AchievedRequestRate == nil || *fig.AchievedRequestRate != 3 {
		t.Errorf("achieved rate %v, want 3", fig.AchievedRequestRate)
	}
	// An SLO on a figure a request lacks: a one-token completion has no TPOT.
	one := ok("e", 100, 100, 5, 1)
	if MeetsSLOs(one, []SLO{{"tpot", 1e9}}) || !MeetsSLOs(one, []SLO{{"ttft", 100}}) {
		t.Error("an SLO is met only by a figure at or under its bound")
	}
}

func TestAchievedRequestRate(t *testing.T) {
	cases := map[string]struct {
		sends  []float64
		want   float64
		wantOK bool
	}{
		// 5 sends over 2 s at 4 req/s offered: (5 − 1) / 2 = 2 req/s achieved.
		"half the offered rate": {[]float64{0, 500, 1000, 1500, 2000}, 2, true},
		"one send":              {[]float64{10}, 0, false},
		"simultaneous":          {[]float64{10, 10}, 0, false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var recs []Record
			for _, s := range tc.sends {
				recs = append(recs, Record{SendAtMS: f(s)})
			}
			recs = append(recs, Record{}) // never sent: not counted
			got, ok := AchievedRequestRate(recs)
			if ok != tc.wantOK || !near(got, tc.want) {
				t.Errorf("got %v %v, want %v %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestErrorGroups(t *testing.T) {
	body := `HTTP 404: {"error":{"message":"The model ` + "`x`" + ` does not exist.","type":"NotFoundError","param":null,"code":404}}`
	recs := []Record{
		{ID: "b/0", Outcome: HTTPError, HTTPStatus: 404, Error: body},
		{ID: "b/1", Outcome: OK},
		{ID: "b/2", Outcome: StreamError, Error: "stream ended before [DONE]"},
		{ID: "b/3", Outcome: HTTPError, HTTPStatus: 404, Error: body},
		{ID: "b/4", Outcome: HTTPError, HTTPStatus: 502, Error: "HTTP 502: Bad Gateway"},
		{ID: "b/5", Outcome: Cancelled, Error: "block hard bound reached: stream read: read tcp 127.0.0.1:58984->127.0.0.1:44995: i/o timeout"},
		{ID: "b/6", Outcome: Cancelled, Error: "block hard bound reached: stream read: read tcp 127.0.0.1:58986->127.0.0.1:44995: i/o timeout"},
	}
	want := []ErrorGroup{
		{HTTPError, "HTTP 404 NotFoundError: The model `x` does not exist.", 2, "b/0"},
		{Cancelled, "block hard bound reached: stream read: read tcp: i/o timeout", 2, "b/5"},
		{StreamError, "stream ended before [DONE]", 1, "b/2"},
		{HTTPError, "HTTP 502: Bad Gateway", 1, "b/4"},
	}
	if diff := cmp.Diff(want, ErrorGroups(recs)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
