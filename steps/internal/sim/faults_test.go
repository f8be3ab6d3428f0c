package sim

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/tokens"
)

// classify names the failure a careful client would record for a stream (DESIGN.md's
// failure classes): every fault must land in exactly its own class.
func classify(r *streamResult) string {
	switch {
	case r.status != http.StatusOK:
		return "http_error"
	case r.inband != nil:
		return "inband_error"
	case errors.Is(r.readErr, context.DeadlineExceeded):
		return "hang"
	case r.readErr != nil || !r.done:
		return "stream_cut"
	case r.finish == finishAbort:
		return "abort"
	case r.usage == nil:
		return "missing_usage"
	case r.content == "" && r.finish == finishLength:
		return "reasoning_exhaustion"
	}
	return "ok"
}

func TestFaultsAreClassifiableOnTheWire(t *testing.T) {
	cases := map[string]struct {
		faults     Faults
		want       string
		wantTokens int // tokens seen before the fault; -1 to skip
	}{
		"none":                 {Faults{}, "ok", -1},
		"http 503":             {Faults{HTTPErrorRate: 1, HTTPErrorStatus: 503}, "http_error", 0},
		"stream cut":           {Faults{StreamCutRate: 1, StreamCutAfter: 5}, "stream_cut", 5},
		"stream cut at once":   {Faults{StreamCutRate: 1}, "stream_cut", 0},
		"in-band error":        {Faults{InbandErrorRate: 1, InbandErrorAfter: 3}, "inband_error", 3},
		"hang":                 {Faults{HangRate: 1, HangAfter: 4}, "hang", 4},
		"reasoning exhaustion": {Faults{ReasoningExhaustionRate: 1}, "reasoning_exhaustion", 2048},
		"omitted usage":        {Faults{OmitUsageRate: 1}, "missing_usage", -1},
		"abort":                {Faults{AbortRate: 1, AbortAfter: 6}, "abort", 6},
		"zero rates":           {Faults{StreamCutRate: 0, StreamCutAfter: 5}, "ok", -1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rn := startServer(t, Config{TimeScale: fastScale, Faults: tc.faults})
			ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
			defer cancel()
			res, err := doStream(ctx, rn.URL(), "/v1/chat/completions", "f", streamChat(promptOf("f", 20), max(tc.wantTokens, 2000)))
			if err != nil {
				t.Fatal(err)
			}
			if got := classify(res); got != tc.want {
				t.Fatalf("classified %q, want %q (status %d, err %v, done %v)", got, tc.want, res.status, res.readErr, res.done)
			}
			if tc.want == "inband_error" && !res.done {
				t.Error("in-band error not followed by [DONE]")
			}
			// An aborted request ends like vLLM's: a finish_reason chunk, usage counting
			// the tokens it streamed, [DONE].
			if tc.want == "abort" && (!res.done || res.usage == nil || res.usage.CompletionTokens != tc.wantTokens) {
				t.Errorf("aborted stream: done %v usage %+v, want [DONE] and usage of %d tokens", res.done, res.usage, tc.wantTokens)
			}
			if tc.wantTokens >= 0 {
				if got := tokens.Count(res.reasoning) + tokens.Count(res.content); got != tc.wantTokens {
					t.Errorf("%d tokens before the fault, want %d", got, tc.wantTokens)
				}
			}
		})
	}
}

// A fault rate below 1 must pick the same requests on every run.
func TestFaultDecisionsAreReproducible(t *testing.T) {
	pick := func() []bool {
		rn := startServer(t, Config{TimeScale: fastScale, Seed: 11, Faults: Faults{HTTPErrorRate: 0.5}})
		var out []bool
		for i := 0; i < 16; i++ {
			res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "r"+string(rune('a'+i)), streamChat("x", 8))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, res.status != http.StatusOK)
		}
		return out
	}
	a, b := pick(), pick()
	failed := 0
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: failed %v then %v", i, a[i], b[i])
		}
		if a[i] {
			failed++
		}
	}
	if failed == 0 || failed == len(a) {
		t.Errorf("%d of %d failed at rate 0.5", failed, len(a))
	}
}

func TestSlowdownStretchesTiming(t *testing.T) {
	rn := startServer(t, Config{TimeScale: 0.05})
	ttft := func(tag string) time.Duration {
		// Distinct prompts: a repeat would be served from the prefix cache.
		res, err := doStream(context.Background(), rn.URL(), "/v1/chat/completions", "", streamChat(promptOf(tag, 2000), 2))
		if err != nil || res.usage == nil {
			t.Fatalf("%v %+v", err, res)
		}
		return res.ttft()
	}
	normal := ttft("a")
	if err := rn.Server().SetFaults(Faults{Slowdown: 4}); err != nil {
		t.Fatal(err)
	}
	slowed := ttft("b")
	if slowed < normal*5/2 {
		t.Errorf("TTFT %v under slowdown 4, %v without", slowed, normal)
	}
}

func TestHealthFollowsInjectedFault(t *testing.T) {
	rn := startServer(t, Config{TimeScale: fastScale})
	status := func() int {
		resp, err := http.Get(rn.URL() + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	cases := []struct {
		faults Faults
		want   int
	}{{Faults{}, 200}, {Faults{Unhealthy: true}, 503}, {Faults{}, 200}}
	for _, c := range cases {
		if err := rn.Server().SetFaults(c.faults); err != nil {
			t.Fatal(err)
		}
		if got := status(); got != c.want {
			t.Errorf("faults %+v: /health %d, want %d", c.faults, got, c.want)
		}
	}
	if err := rn.Server().SetFaults(Faults{HangRate: 2}); err == nil {
		t.Error("rate 2 accepted")
	}
}
