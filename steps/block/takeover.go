package block

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
	"github.com/rigor-bench/rigor/steps/internal/promscrape"
	"github.com/rigor-bench/rigor/steps/internal/target"
)

// Takeover detection: another stack may take the endpoint over while a block runs (a
// restart, or another server bound to the same port serving the same model name).
// The block then checks, during and after the run, that the stack answering is the
// one it was held to:
//   - during: every response names the incarnation that answered in the target's
//     identity_header (the simulator sends sim.IncarnationHeader); each request
//     record keeps it (served_by), and every answered request must carry the value
//     the endpoint answered with before the run;
//   - after: the header of a new answer, the model list of /v1/models (ids, owners,
//     roots, max_model_len), and the native counters, none of which may go backwards
//     between the before and after scrapes.
// Any difference is class identity. The block's records stay as they are; the block
// fails, so its cell is never clean.

// probeResult is one GET /v1/models.
type probeResult struct {
	Answered    bool   `json:"answered"`
	Incarnation string `json:"incarnation,omitempty"` // the identity header's value
	Models      string `json:"models,omitempty"`      // modelsFingerprint; "" when no model list came back
	Error       string `json:"error,omitempty"`
}

var probeClient = &http.Client{Timeout: 5 * time.Second}

// probe asks the endpoint for its models and notes who answered.
func probe(ctx context.Context, t target.Target) probeResult {
	url := strings.TrimSuffix(t.Endpoint, "/v1") + "/v1/models"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return probeResult{Error: err.Error()}
	}
	if t.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+t.APIKey)
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return probeResult{Error: err.Error()}
	}
	defer resp.Body.Close()
	r := probeResult{Answered: true}
	if t.IdentityHeader != "" {
		r.Incarnation = resp.Header.Get(t.IdentityHeader)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err == nil && resp.StatusCode/100 == 2 {
		r.Models = modelsFingerprint(body)
	}
	return r
}

// modelsFingerprint is what identifies the served models in a /v1/models answer: each
// model's id, owner, root, parent and max_model_len, sorted. "created" is left out:
// vLLM (and the simulator) stamp it at every call.
func modelsFingerprint(body []byte) string {
	var list struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			Root        string `json:"root"`
			Parent      string `json:"parent"`
			MaxModelLen *int   `json:"max_model_len"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &list) != nil || len(list.Data) == 0 {
		return ""
	}
	var parts []string
	for _, m := range list.Data {
		p := fmt.Sprintf("id=%s owned_by=%s", m.ID, m.OwnedBy)
		if m.Root != "" {
			p += " root=" + m.Root
		}
		if m.Parent != "" {
			p += " parent=" + m.Parent
		}
		if m.MaxModelLen != nil {
			p += fmt.Sprintf(" max_model_len=%d", *m.MaxModelLen)
		}
		parts = append(parts, p)
	}
	sort.Strings(parts)
	return strings.Join(parts, "; ")
}

// counterResets lists every counter series (histogram and summary sample counts
// included) that is lower after than before: a counter only goes down when the
// process that keeps it started again, or is another one.
func counterResets(before, after *promscrape.Snapshot) []string {
	var out []string
	for name, fb := range before.Families {
		switch fb.GetType() {
		case dto.MetricType_COUNTER, dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
		default:
			continue
		}
		fa := after.Families[name]
		if fa == nil {
			continue
		}
		now := seriesValues(fa)
		for key, b := range seriesValues(fb) {
			if a, ok := now[key]; ok && a < b {
				out = append(out, fmt.Sprintf("%s%s %g → %g", name, key, b, a))
			}
		}
	}
	sort.Strings(out)
	return out
}

// seriesValues maps each series of a family ({label="value",...}, labels sorted) to
// its counter value or sample count.
func seriesValues(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, m := range f.Metric {
		labels := make([]string, 0, len(m.Label))
		for _, lp := range m.Label {
			labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
		}
		sort.Strings(labels)
		key := "{" + strings.Join(labels, ",") + "}"
		switch {
		case m.Counter != nil:
			out[key] = m.Counter.GetValue()
		case m.Histogram != nil:
			out[key] = float64(m.Histogram.GetSampleCount())
		case m.Summary != nil:
			out[key] = float64(m.Summary.GetSampleCount())
		}
	}
	return out
}

// takeoverEvidence is the block's identity.json: what the block was held to and who
// answered.
type takeoverEvidence struct {
	Container     *target.Seen   `json:"container,omitempty"`
	Header        string         `json:"identity_header,omitempty"`
	Before        probeResult    `json:"before"`
	After         probeResult    `json:"after"`
	ServedBy      map[string]int `json:"served_by,omitempty"` // answered requests per header value
	CounterResets []string       `json:"counter_resets,omitempty"`
	Findings      []string       `json:"findings,omitempty"`
}

// checkTakeover checks that the stack that answered the block's requests is the one
// that answered before it, and writes identity.json. after is the native scrape after
// the block (nil when it failed).
func checkTakeover(sc *engine.StepContext, t target.Target, before beforeState, after *promscrape.Snapshot) *engine.Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev := takeoverEvidence{Container: before.seen, Header: t.IdentityHeader, Before: before.probe, After: probe(ctx, t)}
	add := func(format string, args ...any) { ev.Findings = append(ev.Findings, fmt.Sprintf(format, args...)) }
	want := before.probe.Incarnation
	if t.IdentityHeader != "" && before.probe.Answered {
		answered, other := servedBy(sc.Path("requests.jsonl"), want, &ev)
		if other > 0 {
			var names []string
			for v := range ev.ServedBy {
				if v != want {
					names = append(names, fmt.Sprintf("%q", v))
				}
			}
			slices.Sort(names)
			add("%d of %d answered requests were served by %s, not by %q that answered before the block (%s)",
				other, answered, strings.Join(names, ", "), want, t.IdentityHeader)
		}
		if ev.After.Answered && ev.After.Incarnation != want {
			add("after the block %s answers as %q, not %q", t.Endpoint, ev.After.Incarnation, want)
		}
	}
	if before.probe.Models != "" {
		switch {
		case !ev.After.Answered:
			add("%s/v1/models answered before the block and not after it (%s)", t.Endpoint, ev.After.Error)
		case ev.After.Models != before.probe.Models:
			add("/v1/models changed during the block: %s before, %s after", before.probe.Models, orNone(ev.After.Models))
		}
	}
	if before.metrics != nil && after != nil {
		if ev.CounterResets = counterResets(before.metrics, after); len(ev.CounterResets) > 0 {
			shown := ev.CounterResets
			if len(shown) > 3 {
				shown = append(shown[:3:3], fmt.Sprintf("and %d more in identity.json", len(ev.CounterResets)-3))
			}
			add("native counters went backwards between the scrapes before and after the block: %s", strings.Join(shown, "; "))
		}
	}
	_ = writeJSON(sc.Path("identity.json"), ev)
	if len(ev.Findings) == 0 {
		return nil
	}
	r := engine.Failed(engine.ClassIdentity, "another stack answered the block: %s; every record is kept and the block is not clean",
		strings.Join(ev.Findings, "; "))
	return &r
}

// servedBy counts, over the block's answered requests (those with an HTTP status),
// the identity header values, and how many differ from want.
func servedBy(path, want string, ev *takeoverEvidence) (answered, other int) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	recs, _ := loadgen.ReadRecords(f)
	ev.ServedBy = map[string]int{}
	for _, r := range recs {
		if r.HTTPStatus == 0 {
			continue // no answer, so nobody to name
		}
		answered++
		ev.ServedBy[r.ServedBy]++
		if r.ServedBy != want {
			other++
		}
	}
	return answered, other
}

func orNone(s string) string {
	if s == "" {
		return "no model list"
	}
	return s
}
