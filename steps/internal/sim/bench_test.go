package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// BenchmarkStreamC1024 streams 1024 concurrent requests of 200 tokens each, every token
// 10 ms after the previous one: the schedule asks for 102,400 tokens/s, each in its own
// SSE event and flush. tok/s is what was delivered to the (in-process, deliberately cheap)
// client, and tok/flush stays at 1 while the server keeps to its schedule. One op is one
// wave of 1024 requests. Run with -cpu 1 for the one-core figure:
//
//	go test ./steps/internal/sim -run '^$' -bench StreamC1024 -cpu 1
func BenchmarkStreamC1024(b *testing.B) {
	p := builtinProfiles["incumbent"]
	// Prefill out of the way and a flat 10 ms TPOT, so that the load is the token stream itself.
	p.PrefillBase, p.PrefillSlowdownPerRunning, p.PrefillTokensPerSecond = 0, 0, 1e9
	p.TPOTBase, p.TPOTPerRunning = 10*time.Millisecond, 0
	benchmarkStreams(b, Config{Profile: p, MaxRunning: 1024}, 200)
}

// BenchmarkStreamC1024Unpaced is the same load at a time scale so small that every token
// is due at once: the figure is the raw cost of generating, framing and reading tokens,
// with chunks that are already due coalesced into one write.
func BenchmarkStreamC1024Unpaced(b *testing.B) {
	benchmarkStreams(b, Config{TimeScale: 1e-6, MaxRunning: 1024}, 200)
}

func benchmarkStreams(b *testing.B, cfg Config, maxTokens int) {
	const streams = 1024
	rn, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer rn.Close()
	tr := &http.Transport{MaxIdleConns: streams, MaxIdleConnsPerHost: streams, MaxConnsPerHost: streams}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	url := rn.URL() + "/v1/chat/completions"
	body, _ := json.Marshal(streamChat(promptOf("bench", 64), maxTokens))

	var total int64
	b.ResetTimer()
	start := time.Now()
	for op := 0; op < b.N; op++ {
		var (
			wg sync.WaitGroup
			mu sync.Mutex
		)
		for s := 0; s < streams; s++ {
			wg.Add(1)
			go func(s int) {
				defer wg.Done()
				n, err := streamTokens(client, url, "b"+strconv.Itoa(op)+"-"+strconv.Itoa(s), body)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				total += int64(n)
				mu.Unlock()
			}(s)
		}
		wg.Wait()
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(total)/elapsed.Seconds(), "tok/s")
	st := rn.Server().Stats()
	b.ReportMetric(float64(st.GeneratedTokens)/float64(st.TokenFlushes), "tok/flush")
}

var completionTokensKey = []byte(`"completion_tokens":`)

// streamTokens reads one stream to its end with a cheap client and returns the usage's
// completion_tokens.
func streamTokens(client *http.Client, url, id string, body []byte) (int, error) {
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-Request-Id", id)
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndex(data, completionTokensKey)
	if i < 0 || !bytes.HasSuffix(data, []byte("data: [DONE]\n\n")) {
		return 0, io.ErrUnexpectedEOF
	}
	rest := data[i+len(completionTokensKey):]
	end := bytes.IndexByte(rest, ',')
	return strconv.Atoi(string(rest[:end]))
}
