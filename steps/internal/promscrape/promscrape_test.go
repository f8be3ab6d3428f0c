package promscrape_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// TestPresetsReadTheirEngine scrapes a simulator serving each engine's own metric
// names and reads them through that engine's preset: every name the preset gives is
// found, and the deltas are what the requests did. Read through the other engine's
// preset, the same scrape has none of them.
func TestPresetsReadTheirEngine(t *testing.T) {
	for _, engine := range promscrape.Engines() {
		t.Run(engine, func(t *testing.T) {
			prof, _ := sim.LookupProfile("incumbent")
			rn, err := sim.Listen("127.0.0.1:0", sim.Config{Profile: prof, TimeScale: 0.001, Engine: engine})
			if err != nil {
				t.Fatal(err)
			}
			defer rn.Close()
			names, ok := promscrape.Preset(engine)
			if !ok {
				t.Fatalf("no preset for %s", engine)
			}
			before, err := promscrape.Scrape(context.Background(), rn.URL()+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []string{names.Running, names.Waiting, names.KVUsage} {
				if _, ok := before.Sum(n); !ok {
					t.Errorf("gauge %s not served", n)
				}
			}
			const requests = 3
			for i := range requests {
				body := `{"model":"` + prof.ServedModelName + `","stream":false,"max_tokens":4,"messages":[{"role":"user","content":"` + strings.Repeat("same words again ", 40) + `"}]}`
				req, _ := http.NewRequest(http.MethodPost, rn.URL()+"/v1/chat/completions", strings.NewReader(body))
				req.Header.Set("X-Request-Id", fmt.Sprint("p", i))
				resp, err := http.DefaultClient.Do(req)
				if err != nil || resp.StatusCode != 200 {
					t.Fatalf("request %d: %v %v", i, err, resp)
				}
				resp.Body.Close()
			}
			after, err := promscrape.Scrape(context.Background(), rn.URL()+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			d := names.Delta(before, after)
			if len(d.Missing) > 0 {
				t.Errorf("preset names the engine does not serve: %v", d.Missing)
			}
			prompt := float64(requests * (120 + 2)) // 120 words and two template markers
			if d.PromptTokens != prompt || d.PrefixQueries != prompt || d.GenerationTokens != requests*4 {
				t.Errorf("prompt %v queries %v generation %v, want %v %v %v", d.PromptTokens, d.PrefixQueries, d.GenerationTokens, prompt, prompt, requests*4)
			}
			if d.PrefixHits < prompt/2 {
				t.Errorf("prefix hits %v of %v queried: the repeated prompt was not seen as cached", d.PrefixHits, prompt)
			}
			var finished float64
			for _, v := range d.RequestSuccess {
				finished += v
			}
			if finished != requests {
				t.Errorf("request success %v, want %d finished", d.RequestSuccess, requests)
			}
			for _, other := range promscrape.Engines() {
				if other == engine {
					continue
				}
				on, _ := promscrape.Preset(other)
				if od := on.Delta(before, after); len(od.Missing) == 0 {
					t.Errorf("the %s preset found every name in a %s scrape", other, engine)
				}
			}
		})
	}
}

func TestDeltaWithoutFinishLabel(t *testing.T) {
	parse := func(s string) *promscrape.Snapshot {
		snap, err := promscrape.Parse([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return snap
	}
	before := parse("# TYPE sglang:num_requests_total counter\nsglang:num_requests_total{model_name=\"m\"} 10\n# TYPE sglang:num_aborted_requests_total counter\nsglang:num_aborted_requests_total{model_name=\"m\"} 1\n")
	after := parse("# TYPE sglang:num_requests_total counter\nsglang:num_requests_total{model_name=\"m\"} 15\n# TYPE sglang:num_aborted_requests_total counter\nsglang:num_aborted_requests_total{model_name=\"m\"} 3\n")
	d := promscrape.Names{RequestSuccess: "sglang:num_requests_total", RequestsAborted: "sglang:num_aborted_requests_total"}.Delta(before, after)
	if diff := cmp.Diff(map[string]float64{"all": 5}, d.RequestSuccess); diff != "" || d.RequestsAborted == nil || *d.RequestsAborted != 2 || len(d.Missing) != 0 {
		t.Errorf("success %v aborted %v missing %v", d.RequestSuccess, d.RequestsAborted, d.Missing)
	}
}
