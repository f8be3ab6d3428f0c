package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkClientCPUPer1kTokens measures the client's CPU per 1,000 streamed tokens.
// The in-process server writes a pre-rendered stream of 1,000 one-token content
// chunks (about 90 KB) in a single write, so nearly all CPU in the measured window is
// the client: transport, SSE framing, JSON decoding and stamping. The reported
// cpu-ms/1k-tok is process user+system CPU (client plus that one server write per
// request) divided by streamed tokens.
//
// Sub-benchmarks: "block" is the block step's client (no chunk recording); "bench"
// records every token chunk's arrival, as `rigor bench` does for inter-token latency;
// "bench-usage" also reads per-chunk usage (continuous_usage_stats), where every chunk
// carries a usage object.
func BenchmarkClientCPUPer1kTokens(b *testing.B) {
	const tokensPerRequest = 1000
	for _, bc := range []struct {
		name            string
		record, perUsed bool
	}{{"block", false, false}, {"bench", true, false}, {"bench-usage", true, true}} {
		b.Run(bc.name, func(b *testing.B) {
			stream := okStream(tokensPerRequest)
			if bc.perUsed {
				stream = continuousUsageStream(tokensPerRequest)
			}
			benchClient(b, []byte(stream), tokensPerRequest, func(c *Config) {
				c.RecordChunks, c.Workload.ContinuousUsage = bc.record, bc.perUsed
			})
		})
	}
}

func benchClient(b *testing.B, stream []byte, tokensPerRequest int, set func(*Config)) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Requests, cfg.Concurrency = b.N, 1
	cfg.Timeout, cfg.RequestTimeout = 10*time.Minute, time.Minute
	set(&cfg)

	before := cpu()
	b.ResetTimer()
	res, err := Run(context.Background(), cfg, io.Discard)
	b.StopTimer()
	used := cpu() - before
	if err != nil || res.Outcomes[OK] != b.N {
		b.Fatalf("err %v, outcomes %v", err, res.Outcomes)
	}
	tokens := float64(b.N * tokensPerRequest)
	b.ReportMetric(float64(used.Microseconds())/1000/tokens*1000, "cpu-ms/1k-tok")
	b.ReportMetric(tokens/res.WallS, "tok/s")
	b.SetBytes(int64(len(stream)))
}

// continuousUsageStream is okStream with vLLM's per-chunk usage on every chunk.
func continuousUsageStream(n int) string {
	var b strings.Builder
	b.WriteString(ev(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":{"prompt_tokens":190,"total_tokens":190,"completion_tokens":0}}`))
	for i := range n {
		b.WriteString(ev(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":null}],"usage":{"prompt_tokens":190,"total_tokens":%d,"completion_tokens":%d}}`, i, 190+i+1, i+1)))
	}
	b.WriteString(finishChunk("stop"))
	b.WriteString(usageChunk(190, n))
	b.WriteString(doneEvent)
	return b.String()
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
