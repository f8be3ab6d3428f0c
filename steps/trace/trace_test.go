package trace

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps/internal/sim"
	"github.com/rigor-bench/rigor/steps/internal/sim/simtest"
	"github.com/rs/zerolog"
	"github.com/zclconf/go-cty/cty"
)

// simTarget starts a simulator container on its own host and keeps it under load.
func simTarget(t *testing.T, faults sim.Faults) (cty.Value, *sim.Host, string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	host := simtest.Host(t, "trace")
	name := "c"
	prof, _ := sim.LookupProfile("incumbent")
	if _, err := host.Create(sim.ContainerSpec{Name: name, Image: "sim:incumbent", Listen: addr, Config: sim.Config{Profile: prof, TimeScale: 0.05, Faults: faults}}); err != nil {
		t.Fatal(err)
	}
	if err := host.Start(name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = host.Stop(name); _ = host.Remove(name) })
	endpoint := "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				body := fmt.Sprintf(`{"messages":[{"role":"user","content":"load %d %d words words words"}],"max_tokens":300,"stream":true}`, i, k)
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/v1/chat/completions", strings.NewReader(body))
				if resp, err := http.DefaultClient.Do(req); err == nil {
					_, _ = drain(resp)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	time.Sleep(60 * time.Millisecond) // the batch fills
	tv := cty.ObjectVal(map[string]cty.Value{
		"name":      cty.StringVal("t"),
		"host":      cty.ObjectVal(map[string]cty.Value{"name": cty.StringVal(host.Name()), "runtime": cty.StringVal("sim"), "sim_dir": cty.StringVal(host.Dir())}),
		"container": cty.StringVal(name),
		"endpoint":  cty.StringVal(endpoint),
		"image":     cty.StringVal("sim:incumbent"),
	})
	return tv, host, name
}

func drain(resp *http.Response) (int64, error) {
	defer resp.Body.Close()
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		n += int64(k)
		if err != nil {
			return n, nil
		}
	}
}

func stepContext(t *testing.T, tv cty.Value, duration string, ranks ...int64) *engine.StepContext {
	t.Helper()
	var rs []cty.Value
	for _, r := range ranks {
		rs = append(rs, cty.NumberIntVal(r))
	}
	cfg := map[string]cty.Value{}
	cfg["target"] = tv
	cfg["duration"] = cty.StringVal(duration)
	cfg["ranks"] = cty.ListVal(rs)
	cfg["url"] = cty.NullVal(cty.String)
	cfg["method"] = cty.NullVal(cty.String)
	cfg["min_samples"] = cty.NullVal(cty.Number)
	dir := t.TempDir()
	return &engine.StepContext{Addr: "trace.t", Instance: &plans.Instance{}, Config: cty.ObjectVal(cfg), Dir: dir, Log: zerolog.Nop()}
}

func TestCompleteCapture(t *testing.T) {
	tv, _, _ := simTarget(t, sim.Faults{})
	sc := stepContext(t, tv, "200ms", 0, 1)
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s (%s): %s", res.Status, res.Class, res.Message)
	}
	if n, _ := res.Outputs.GetAttr("samples").AsBigFloat().Int64(); n < 10 {
		t.Errorf("%d samples under load", n)
	}
	for _, f := range []string{"raw.json", "capture.json", "validation.json"} {
		if _, err := os.Stat(sc.Path(f)); err != nil {
			t.Errorf("%s not kept: %v", f, err)
		}
	}
	var v Validation
	b, _ := os.ReadFile(sc.Path("validation.json"))
	_ = json.Unmarshal(b, &v)
	if !v.Complete || len(v.Checks) < 6 {
		t.Errorf("validation.json: %+v", v)
	}
	var rec captureRecord
	b, _ = os.ReadFile(sc.Path("capture.json"))
	_ = json.Unmarshal(b, &rec)
	if rec.RuntimeIncarnation.Before == "" || rec.RuntimeIncarnation.Before != rec.RuntimeIncarnation.After || !strings.Contains(rec.URL, "duration=200ms") {
		t.Errorf("capture.json: %+v", rec)
	}
}

func TestIncompleteCaptures(t *testing.T) {
	cases := map[string]struct {
		faults  sim.Faults
		ranks   []int64
		want    engine.FailureClass
		message []string
	}{
		"drop":         {sim.Faults{TraceDropRate: 0.3}, []int64{0, 1}, engine.ClassInstrumentation, []string{"dropped", "shorter capture window"}},
		"overflow":     {sim.Faults{TraceOverflow: true}, []int64{0, 1}, engine.ClassInstrumentation, []string{"overflowed", "shorter capture window"}},
		"missing rank": {sim.Faults{}, []int64{0, 1, 2}, engine.ClassInstrumentation, []string{"declared rank(s) 2 absent"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tv, _, _ := simTarget(t, tc.faults)
			sc := stepContext(t, tv, "200ms", tc.ranks...)
			res := Step{}.Run(context.Background(), sc)
			if res.Status != engine.StatusFailed || res.Class != tc.want {
				t.Fatalf("%s (%s): %s; want failed (%s)", res.Status, res.Class, res.Message, tc.want)
			}
			for _, m := range tc.message {
				if !strings.Contains(res.Message, m) {
					t.Errorf("message lacks %q: %s", m, res.Message)
				}
			}
			if _, err := os.Stat(sc.Path("raw.json")); err != nil {
				t.Errorf("an incomplete capture must still be kept: %v", err)
			}
		})
	}
}

func TestRestartDuringCapture(t *testing.T) {
	tv, host, name := simTarget(t, sim.Faults{})
	sc := stepContext(t, tv, "400ms", 0, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		_ = host.InjectRestart(name)
	}()
	res := Step{}.Run(context.Background(), sc)
	if res.Status != engine.StatusFailed || res.Class != engine.ClassRestart || !strings.Contains(res.Message, "incarnation") {
		t.Fatalf("%s (%s): %s; want failed (restart)", res.Status, res.Class, res.Message)
	}
}

// A capture whose own incarnation pair differs (a server that restarted its tracer)
// fails as a restart even on a runtime rigor cannot inspect.
func TestServerReportedIncarnationChange(t *testing.T) {
	doc := validDoc()
	doc = strings.Replace(doc, `"after":"inc-1"`, `"after":"inc-2"`, 1)
	res, _ := runAgainst(t, doc)
	if res.Class != engine.ClassRestart {
		t.Fatalf("%s (%s): %s; want restart", res.Status, res.Class, res.Message)
	}
}

func TestBrokenReferencesAndAnchors(t *testing.T) {
	cases := map[string]struct{ from, to, want string }{
		"unknown graph":        {`"graph":0`, `"graph":7`, "names graph 7"},
		"anchors not bounding": {`"end_mono_ns":2000`, `"end_mono_ns":99999999`, "do not bound the window"},
		"sequence gap":         {`"seq":1`, `"seq":5`, "skip"},
		"schema":               {`"dropped_samples":0`, `"dropped_samples":-1`, "schema"},
		"sample lacks a rank":  {`,{"rank":1,"start_ns":1022,"end_ns":1260}`, ``, "1 rank interval(s) missing from samples (first: sample 0 lacks rank 1)"},
		"anchors disagree":     {`"utc":"2026-01-01T00:00:00.0000021Z"`, `"utc":"2026-01-01T00:00:05.0000021Z"`, "UTC span 5.0000012s and monotonic span 1.2µs of the anchors differ by more than"},
	}
	if res, _ := runAgainst(t, validDoc()); res.Status != engine.StatusSucceeded {
		t.Fatalf("the valid document fails: %s", res.Message)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(validDoc(), tc.from, tc.to, 1)
			if doc == validDoc() {
				t.Fatalf("case does not change the document")
			}
			res, _ := runAgainst(t, doc)
			if res.Class != engine.ClassInstrumentation || !strings.Contains(res.Message, tc.want) {
				t.Fatalf("%s (%s): %s; want instrumentation_incomplete mentioning %q", res.Status, res.Class, res.Message, tc.want)
			}
		})
	}
}

func runAgainst(t *testing.T, doc string) (engine.Result, *engine.StepContext) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Query().Get("duration") != "1s" {
			http.Error(w, "bad request", 400)
			return
		}
		_, _ = w.Write([]byte(doc))
	}))
	t.Cleanup(srv.Close)
	tv := cty.ObjectVal(map[string]cty.Value{
		"name": cty.StringVal("ext"), "endpoint": cty.StringVal(srv.URL), "runtime": cty.StringVal("docker"),
	})
	sc := stepContext(t, tv, "1s", 0, 1)
	res := Step{}.Run(context.Background(), sc)
	raw, err := os.ReadFile(filepath.Join(sc.Dir, "raw.json"))
	if err != nil || string(raw) != doc {
		t.Errorf("raw.json is not the answer byte for byte: %v", err)
	}
	return res, sc
}

// validDoc is a minimal complete capture of two samples on two ranks.
func validDoc() string {
	sample := func(seq, at int) string {
		return fmt.Sprintf(`{"seq":%d,"graph":0,"scheduled_lanes":2,"queued":false,"requests":[{"slot":0,"generation":1},{"slot":1,"generation":1}],`+
			`"selected_at_ns":%d,"committed_at_ns":%d,"completion_observed_at_ns":%d,"host_wall_ns":300,"retained_ns":200,`+
			`"selection":{"observed_at_ns":%d,"freshness":"fresh","refresh_origin":"measured"},`+
			`"ranks":[{"rank":0,"start_ns":%d,"end_ns":%d},{"rank":1,"start_ns":%d,"end_ns":%d}]}`,
			seq, at, at+10, at+300, at-100, at+20, at+250, at+22, at+260)
	}
	return `{"format":"rigor.scheduler-trace.v1","requested_duration_ns":1000,` +
		`"incarnation":{"before":"inc-1","after":"inc-1"},` +
		`"clock":{"origin":"process","before":{"mono_ns":900,"utc":"2026-01-01T00:00:00.0000009Z"},"after":{"mono_ns":2100,"utc":"2026-01-01T00:00:00.0000021Z"}},` +
		`"window":{"start_mono_ns":1000,"end_mono_ns":2000},"ranks":[0,1],"capacity":16,"overflow":false,"dropped_samples":0,` +
		`"graphs":[{"index":0,"kind":"decode","shape":"b2","batch_capacity":2,"token_capacity":8,"prefill_capacity":0}],` +
		`"samples":[` + sample(0, 1000) + `,` + sample(1, 1400) + `]}`
}
