package calibrate

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

func f(v float64) *float64 { return &v }

// TestAnalyzeHandComputed checks the error formulas on values worked out by hand.
func TestAnalyzeHandComputed(t *testing.T) {
	const ms = int64(time.Millisecond)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	anchors := &loadgen.Anchors{Before: loadgen.Anchor{UTC: base, MonoMS: 0}}
	// Client: scheduled 10 ms, TTFO 32 ms, last token 132 ms, 11 tokens -> TTFT 22 ms,
	// capacity TPOT 100/10 = 10 ms.
	rec := loadgen.Record{
		ID: "calibration/0", Outcome: loadgen.OK, ScheduledAtMS: f(10), TTFOAtMS: f(32), LastTokenAtMS: f(132),
		ContentChunks: 11, Usage: &loadgen.Usage{CompletionTokens: 11},
	}
	// Server: received at 10.5 ms, first flush 30.5 ms, last flush 129.5 ms -> TTFT 20 ms,
	// TPOT 99/10 = 9.9 ms.
	u := base.UnixNano()
	truth := map[string]RequestTruth{"calibration/0": {RecvNS: u + 10*ms + ms/2, FirstNS: u + 30*ms + ms/2, LastNS: u + 129*ms + ms/2, Chunks: 11, Tokens: 11}}
	failed := loadgen.Record{ID: "calibration/1", Outcome: loadgen.HTTPError}
	e := Analyze([]loadgen.Record{rec, failed}, anchors, truth)
	near := func(name string, got *float64, want float64) {
		t.Helper()
		if got == nil || math.Abs(*got-want) > 1e-6 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if e.ArrivalSources[RecvKernel] != 1 {
		t.Errorf("arrival sources %v", e.ArrivalSources)
	}
	if e.Matched != 1 || e.Unmatched != 1 || e.ChunkMismatches != 0 {
		t.Errorf("matched %d unmatched %d mismatches %d, want 1 1 0", e.Matched, e.Unmatched, e.ChunkMismatches)
	}
	near("ttft error", e.TTFTMS.SignedP50, 2)           // 22 - 20
	near("tpot error", e.TPOTMS.SignedP50, 0.1)         // 10 - 9.9
	near("send delay", e.SendDelayMS.AbsP50, 0.5)       // 10.5 - 10
	near("receive delay", e.ReceiveDelayMS.AbsP50, 1.5) // 32 - 30.5
}

// TestRunAgainstExactSchedule runs the real client against the exact-schedule
// simulator: every request is matched with the server's truth, every chunk the
// server flushed is one the client counted, and the client's TPOT error is far below
// the 2 ms schedule itself (a client that stamped after parsing a whole stream, or
// counted chunks wrongly, would be off by whole token gaps).
func TestRunAgainstExactSchedule(t *testing.T) {
	var out bytes.Buffer
	var seen int
	o := Options{Concurrency: 4, Tokens: 20, Requests: 16, TPOT: 2 * time.Millisecond, Timeout: 30 * time.Second,
		OnRecord: func(loadgen.Record) { seen++ }}
	rep, err := Run(context.Background(), o, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Outcomes[loadgen.OK] != 16 || rep.Matched != 16 || rep.Unmatched != 0 || rep.ChunkMismatches != 0 {
		t.Fatalf("outcomes %v matched %d unmatched %d mismatches %d", rep.Outcomes, rep.Matched, rep.Unmatched, rep.ChunkMismatches)
	}
	if seen != 16 {
		t.Errorf("OnRecord called %d times, want 16", seen)
	}
	if rep.StreamedTokens != 16*20 {
		t.Errorf("streamed %d tokens, want 320", rep.StreamedTokens)
	}
	if p := *rep.TPOTMS.AbsP50; p > 0.5 {
		t.Errorf("p50 |TPOT error| %.3f ms: the client is off by a large fraction of the 2 ms schedule", p)
	}
	if p := *rep.TTFTMS.AbsP50; p > 20 {
		t.Errorf("p50 |TTFT error| %.3f ms on loopback: a stream lasts only 40 ms", p)
	}
	if rep.CPUSeconds <= 0 || rep.CPUSecondsPer1k <= 0 || rep.CPUScope != CPUScopeProcess {
		t.Errorf("cpu %v s, %v s/1k, scope %q", rep.CPUSeconds, rep.CPUSecondsPer1k, rep.CPUScope)
	}
	if err := schemas.ValidateValue("calibration", rep); err != nil {
		t.Errorf("calibration.json does not match its schema: %v", err)
	}
	if err := rep.CheckGates(); err != nil {
		t.Errorf("no gates set, yet: %v", err)
	}
	recs, err := loadgen.ReadRecords(&out)
	if err != nil || len(recs) != 16 {
		t.Errorf("requests.jsonl: %d records, %v", len(recs), err)
	}
}

func TestGates(t *testing.T) {
	rep := NewReport(Options{Concurrency: 1, Tokens: 2, MaxTTFTError: time.Millisecond, MaxTPOTError: time.Millisecond},
		&loadgen.Result{Outcomes: map[loadgen.Outcome]int{loadgen.OK: 1}},
		[]loadgen.Record{{ID: "a", Outcome: loadgen.OK, ScheduledAtMS: f(0), TTFOAtMS: f(3), LastTokenAtMS: f(4), ContentChunks: 2, Usage: &loadgen.Usage{CompletionTokens: 2}}},
		map[string]RequestTruth{"a": {RecvNS: 1, FirstNS: 1 + int64(time.Millisecond), LastNS: 1 + int64(2*time.Millisecond), Chunks: 2, Tokens: 2}},
		time.Second, CPUScopeProcess)
	// TTFT error 3 - 1 = 2 ms > 1 ms; TPOT error 1 - 1 = 0 ms.
	if rep.Passed || len(rep.Gates) != 2 || rep.Gates[0].Passed || !rep.Gates[1].Passed {
		t.Fatalf("gates %+v passed %v", rep.Gates, rep.Passed)
	}
	err := rep.CheckGates()
	if !errors.Is(err, ErrGate) {
		t.Fatalf("CheckGates = %v, want ErrGate", err)
	}
	if got := err.Error(); !bytes.Contains([]byte(got), []byte("max_ttft_error: p99 |error| 2.000 ms > 1ms")) {
		t.Errorf("message %q does not state the figure and the bound", got)
	}
	if err := schemas.ValidateValue("calibration", rep); err != nil {
		t.Errorf("schema: %v", err)
	}

	// TTFT error 1 - 1 = 0 ms; TPOT error (10 - 1) - 1 = 8 ms > 1 ms.
	rep = NewReport(Options{Concurrency: 1, Tokens: 2, MaxTTFTError: time.Millisecond, MaxTPOTError: time.Millisecond},
		&loadgen.Result{Outcomes: map[loadgen.Outcome]int{loadgen.OK: 1}},
		[]loadgen.Record{{ID: "a", Outcome: loadgen.OK, ScheduledAtMS: f(0), TTFOAtMS: f(1), LastTokenAtMS: f(10), ContentChunks: 2, Usage: &loadgen.Usage{CompletionTokens: 2}}},
		map[string]RequestTruth{"a": {RecvNS: 1, FirstNS: 1 + int64(time.Millisecond), LastNS: 1 + int64(2*time.Millisecond), Chunks: 2, Tokens: 2}},
		time.Second, CPUScopeProcess)
	if rep.Passed || len(rep.Gates) != 2 || !rep.Gates[0].Passed || rep.Gates[1].Passed {
		t.Fatalf("TPOT gate: gates %+v passed %v", rep.Gates, rep.Passed)
	}
	if err := rep.CheckGates(); !errors.Is(err, ErrGate) || !strings.Contains(err.Error(), "max_tpot_error: p99 |error| 8.000 ms > 1ms") {
		t.Errorf("CheckGates = %v, want the TPOT figure and its bound", err)
	}
}

func TestOptionsValidateNamesTheOption(t *testing.T) {
	cases := map[string]struct {
		o    Options
		want string
	}{
		"concurrency": {Options{Concurrency: 0, Tokens: 4}, "concurrency 0"},
		"tokens":      {Options{Concurrency: 1, Tokens: 1}, "tokens 1"},
		"tpot":        {Options{Concurrency: 1, Tokens: 4, TPOT: -time.Millisecond}, "tpot"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.o.Validate()
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
				t.Errorf("Validate() = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

// TestArrivalFraming feeds the listener's request tracker a keep-alive stream split
// at awkward places and checks each request gets the stamp of the read that carried
// its first byte.
func TestArrivalFraming(t *testing.T) {
	tr := NewTruth()
	c := &arrivalConn{truth: tr}
	req := func(id, body string) string {
		return "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nx-request-id: " + id + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	}
	stream := req("a", `{"k":1}`) + req("b", "") + req("c", strings.Repeat("z", 5000))
	// Reads: first 10 bytes at 1, the rest of a and the first 3 bytes of b at 2,
	// everything else at 3 except the last byte of c's body at 4.
	i1, i2 := 10, len(req("a", `{"k":1}`))+3
	c.track([]byte(stream[:i1]), 1, RecvKernel)
	c.track([]byte(stream[i1:i2]), 2, RecvKernel)
	c.track([]byte(stream[i2:len(stream)-1]), 3, RecvKernel)
	c.track([]byte(stream[len(stream)-1:]), 4, RecvKernel)
	c.track([]byte(req("d", "xy")), 5, RecvRead)
	got := tr.Snapshot()
	want := map[string]int64{"a": 1, "b": 2, "c": 3, "d": 5}
	for id, ns := range want {
		if got[id].RecvNS != ns {
			t.Errorf("%s: arrival %d, want %d", id, got[id].RecvNS, ns)
		}
	}
	if got["d"].RecvSource != RecvRead || c.state != 0 {
		t.Errorf("d source %q, state %d", got["d"].RecvSource, c.state)
	}
}
