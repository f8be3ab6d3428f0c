package block

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// defaultNativeInterval is how often the engine's running/waiting gauges are read
// during a block: often enough to see a queue form in a seconds-long block, rare
// enough that the scrape itself is no load on the server.
const defaultNativeInterval = 100 * time.Millisecond

// nativeSample is one reading of the engine's gauges during a block.
type nativeSample struct {
	AtMS    float64  `json:"at_ms"` // since the sampler started
	Running *float64 `json:"running"`
	Waiting *float64 `json:"waiting"`
	KVUsage *float64 `json:"kv_cache_usage_perc,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// sampleNative reads the target's gauges every interval into native-samples.jsonl
// until stop is called, so the report can state the engine's concurrency from the
// engine rather than infer it from the client.
//
// redact is applied to a scrape error before it is written: the metrics URL it
// quotes may carry a secret (a token in its query).
func sampleNative(path string, t target.Target, interval time.Duration, redact func(string) string) (stop func()) {
	f, err := os.Create(path)
	if err != nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer f.Close()
		enc := json.NewEncoder(f)
		start := time.Now()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			// The first reading waits one interval: a reading before the first
			// request is sent says nothing about the engine under load.
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			s := nativeSample{AtMS: float64(time.Since(start).Microseconds()) / 1000}
			snap, err := promscrape.Scrape(ctx, t.Metrics)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				s.Error = redact(err.Error())
			} else {
				if v, ok := snap.Sum(t.RunningMetric); ok {
					s.Running = &v
				}
				if v, ok := snap.Sum(t.WaitingMetric); ok {
					s.Waiting = &v
				}
				if v, ok := snap.Sum(t.Native.KVUsage); t.Native.KVUsage != "" && ok {
					s.KVUsage = &v
				}
			}
			_ = enc.Encode(s)
		}
	}()
	return func() { cancel(); wg.Wait() }
}

// keepScrape keeps a raw /metrics answer as evidence, with the step's secrets
// redacted: a server may echo a key into a label (an API key as a tenant label),
// and the evidence must not hold it. The counters parse the same.
func keepScrape(sc *engine.StepContext, name string, raw []byte) error {
	return os.WriteFile(sc.Path(name), []byte(sc.Redact(string(raw))), 0o644)
}
