package loadgen

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
func BenchmarkClientCPUPer1kTokens(b *testing.B) {
	const tokensPerRequest = 1000
	stream := []byte(okStream(tokensPerRequest))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	}))
	defer srv.Close()
	cfg := testConfig(srv.URL)
	cfg.Requests, cfg.Concurrency = b.N, 1
	cfg.Timeout, cfg.RequestTimeout = 10*time.Minute, time.Minute

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

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
