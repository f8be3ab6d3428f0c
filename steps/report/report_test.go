package report

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rigor-bench/rigor/schemas"
	"github.com/rigor-bench/rigor/steps/internal/loadgen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var states = []string{"clean", "failed-cell", "stop-blocked", "amended", "verdict-faster", "verdict-noisy", "verdict-drift"}

func build(t *testing.T, name string) *Report {
	t.Helper()
	r, err := Build(filepath.Join("testdata", "states", name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./steps/report -update)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", path, d)
	}
}

// TestGolden compares summary.json and report.md of each checked-in state with its
// golden file; the summary is validated against the schema on the way.
func TestGolden(t *testing.T) {
	for _, name := range states {
		t.Run(name, func(t *testing.T) {
			r := build(t, name)
			sj, err := r.SummaryJSON()
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "golden", name+".summary.json"), sj)
			golden(t, filepath.Join("testdata", "golden", name+".report.md"), r.document(nil).markdown())
			// Building twice gives the same bytes: nothing depends on the clock or map order.
			again, _ := build(t, name).SummaryJSON()
			if !bytes.Equal(sj, again) {
				t.Fatal("summary.json is not deterministic")
			}
		})
	}
}

func row(t *testing.T, r *Report, cell string) *Row {
	t.Helper()
	x := r.rows[cell]
	if x == nil {
		t.Fatalf("no row %s; have %v", cell, slices.Sorted(maps.Keys(r.rows)))
	}
	return x
}

// countLines counts the records of the measured (or priming) blocks of a cell
// directly from the files, independently of the report's code.
func countRecords(t *testing.T, state, cell string, measured bool) (attempted, ok int) {
	t.Helper()
	dir := filepath.Join("testdata", "states", state, "attempts", "block.primary", filepath.FromSlash(cell))
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if (e.Name() == "prime") == measured {
			continue
		}
		f, err := os.Open(filepath.Join(dir, e.Name(), "1", "requests.jsonl"))
		if err != nil {
			continue
		}
		recs, err := loadgen.ReadRecords(f)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			attempted++
			if rec.Outcome == loadgen.OK {
				ok++
			}
		}
	}
	return attempted, ok
}

func TestCleanState(t *testing.T) {
	r := build(t, "clean")
	st := r.Summary.Statistics
	if st.RequiredCells != 6 || st.AcceptedCells != 6 {
		t.Fatalf("cells: %+v", st)
	}
	totalMeasured := 0
	for _, cell := range []string{"incumbent/c1", "incumbent/c2", "candidate/c1", "candidate/c2", "incumbent_after/c1", "incumbent_after/c2"} {
		x := row(t, r, "primary/"+cell)
		att, ok := countRecords(t, "clean", cell, true)
		totalMeasured += att
		if *x.Attempted != att || *x.VisibleSuccesses != ok {
			t.Errorf("%s: row says %d/%d, files say %d/%d", cell, *x.VisibleSuccesses, *x.Attempted, ok, att)
		}
		if x.Timing.TTFT.Samples != ok || !x.Timing.TTFT.Descriptive {
			t.Errorf("%s: TTFT samples %d (want %d, descriptive)", cell, x.Timing.TTFT.Samples, ok)
		}
	}
	if st.MeasuredAttempted != totalMeasured {
		t.Errorf("measured attempted %d, files %d", st.MeasuredAttempted, totalMeasured)
	}
	if st.AttemptedRequests <= st.MeasuredAttempted || st.RequestsNotInStatistics != st.AttemptedRequests-st.MeasuredAttempted {
		t.Errorf("priming accounting: %+v", st)
	}
	if r.Summary.Promotion.Rule == nil || r.Summary.Promotion.DriftArm != "incumbent_after" {
		t.Fatalf("the rule and its drift-control arm: %+v", r.Summary.Promotion)
	}
	// The verdict's per-repetition figures are block aggregates, recomputed here
	// with loadgen.Summarize from the raw records; each gain is the candidate over
	// the mean of the incumbent before and after.
	agg := func(cell string, rep int) float64 {
		fh, err := os.Open(filepath.Join("testdata", "states", "clean", "attempts", "block.primary", cell, "r"+itoa(rep), "1", "requests.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		recs, _ := loadgen.ReadRecords(fh)
		return loadgen.Summarize(recs).AggregateOutputTokS
	}
	paired := 0
	for _, c := range r.Summary.Promotion.Comparisons {
		if !c.Eligible && !strings.Contains(c.Ineligible, "drift") {
			continue
		}
		for _, p := range c.Pairs {
			before, after := agg("incumbent/"+c.Cell, p.Repetition), agg("incumbent_after/"+c.Cell, p.Repetition)
			want := agg("candidate/"+c.Cell, p.Repetition)/((before+after)/2) - 1
			if math.Abs(p.Gain-want) > 1e-12 {
				t.Errorf("%s r%d: gain %v, recomputed %v", c.Cell, p.Repetition, p.Gain, want)
			}
			paired++
		}
		if c.Eligible && c.Role == "primary" && c.Holds != (c.Interval.Lo >= 0.05) {
			t.Errorf("primary holds=%v with interval %+v under criterion interval", c.Holds, c.Interval)
		}
	}
	if paired == 0 {
		t.Fatal("no comparison computed its pairs")
	}
	// The cell's TTFT distribution equals loadgen.Summarise over the same successes.
	var ttft []float64
	for _, rep := range []string{"r1", "r2"} {
		fh, _ := os.Open(filepath.Join("testdata", "states", "clean", "attempts", "block.primary", "candidate", "c2", rep, "1", "requests.jsonl"))
		recs, _ := loadgen.ReadRecords(fh)
		fh.Close()
		for _, rec := range recs {
			if v, ok := loadgen.VisibleTTFTMillis(rec); ok && rec.Outcome == loadgen.OK {
				ttft = append(ttft, v)
			}
		}
	}
	want := loadgen.Summarise(ttft)
	if d := cmp.Diff(want, row(t, r, "primary/candidate/c2").Timing.TTFT); d != "" {
		t.Errorf("TTFT distribution (-loadgen +report):\n%s", d)
	}
	md := string(r.document(nil).markdown())
	if strings.Contains(md, "withheld [") || !strings.Contains(md, "No request failed.") {
		t.Error("clean report must withhold nothing")
	}
}

func TestFailedCellIsWithheld(t *testing.T) {
	r := build(t, "failed-cell")
	var failedIDs []string
	for _, cell := range []string{"incumbent/c1", "incumbent/c2"} {
		x := row(t, r, "primary/"+cell)
		if x.Disposition != Failed || !strings.Contains(x.Reason, "(record)") {
			continue
		}
		att, ok := countRecords(t, "failed-cell", cell, true)
		if *x.Attempted != att || *x.VisibleSuccesses != ok || ok == att {
			t.Errorf("%s: failures must stay in the denominator: row %d/%d, files %d/%d", cell, *x.VisibleSuccesses, *x.Attempted, ok, att)
		}
		failedIDs = append(failedIDs, x.FailedRequestIDs...)
	}
	if len(failedIDs) == 0 {
		t.Fatal("the state has reasoning-exhaustion failures; no failed cell found")
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "withheld [1]") || !strings.Contains(md, failedIDs[0]) {
		t.Error("a failed cell must show withheld with a footnote naming its failed requests")
	}
	if !strings.Contains(md, "No overall winner: at least one arm has a failed cell") {
		t.Error("no overall winner when an arm failed")
	}
	if !strings.Contains(md, "no_visible_output") || !strings.Contains(md, "| length |") {
		t.Error("failures section must list class and finish reason")
	}
	p := r.Summary.Promotion
	if p.Promoted || p.Eligible || !strings.Contains(strings.Join(p.Reasons, " "), "failed request") {
		t.Errorf("a failed request in a compared cell makes the comparison ineligible: %+v", p)
	}
}

func TestStopClassBlocksCells(t *testing.T) {
	r := build(t, "stop-blocked")
	c1 := row(t, r, "primary/candidate/c1")
	if c1.Disposition != Failed || !strings.Contains(c1.Reason, "missing_terminal_metadata") {
		t.Errorf("candidate/c1: %s %q", c1.Disposition, c1.Reason)
	}
	c2 := row(t, r, "primary/candidate/c2")
	if c2.Disposition != Blocked || c2.Reason == "" || c2.Attempted != nil {
		t.Errorf("candidate/c2: %s %q", c2.Disposition, c2.Reason)
	}
	st := r.Summary.Statistics
	if st.BlockedCells != 3 || st.FailedCells != 1 || st.AcceptedCells != 2 { // candidate/c2 and both incumbent_after cells never ran
		t.Errorf("statistics %+v", st)
	}
	if r.Summary.Promotion.Promoted || r.Summary.Promotion.Eligible {
		t.Error("a blocked candidate cannot be promoted")
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "| blocked |") || !strings.Contains(md, "missing_terminal_metadata") {
		t.Error("coverage ledger must show blocked steps and the stop class")
	}
}

func TestAmendmentIsListed(t *testing.T) {
	r := build(t, "amended")
	if r.Summary.Amendments != 1 || r.Summary.PlanSHA256 == r.Summary.EffectivePlan {
		t.Fatalf("amendments %d, plan %s, effective %s", r.Summary.Amendments, r.Summary.PlanSHA256, r.Summary.EffectivePlan)
	}
	if r.Summary.Promotion.Rule.MinGain != 0.03 {
		t.Errorf("the verdict must use the amended rule, got min_gain %v", r.Summary.Promotion.Rule.MinGain)
	}
	// The state is the attack of issue 10: the rule was lowered after the campaign
	// completed, by a rigor that did not classify amendments yet. The journal still
	// shows it post-hoc, and the verdict says so.
	if v := r.Summary.Promotion; !v.PostHoc || v.Promoted || !strings.HasPrefix(v.Verdict, "not promoted: post-hoc, not pre-registered (amendment 1 changed campaign.decision.min_gain after ") {
		t.Errorf("the amended rule must be labelled post-hoc: %+v", v)
	}
	md := string(r.document(nil).markdown())
	for _, want := range []string{"lower the minimum gain to 3% after review", "campaign.decision.min_gain: 0.05 → 0.03", "1 campaign setting(s) changed", "| post-hoc, not pre-registered |"} {
		if !strings.Contains(md, want) {
			t.Errorf("amendments section lacks %q", want)
		}
	}
}

func TestTamperedRecordsAreReported(t *testing.T) {
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "states", "clean"), dir)
	rel := "attempts/block.primary/candidate/c1/r1/1/requests.jsonl"
	p := filepath.Join(dir, filepath.FromSlash(rel))
	b, _ := os.ReadFile(p)
	b = bytes.Replace(b, []byte(`"outcome":"ok"`), []byte(`"outcome":"OK"`), 1)
	os.WriteFile(p, b, 0o644)
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Summary.Integrity) != 1 || !strings.Contains(r.Summary.Integrity[0], rel) {
		t.Fatalf("integrity problems %v, want one naming %s", r.Summary.Integrity, rel)
	}
}

// TestWrite renders every format with charts; the HTML embeds the PNGs.
func TestWrite(t *testing.T) {
	out := t.TempDir()
	files, err := Generate(Options{State: filepath.Join("testdata", "states", "failed-cell"), Out: out, Format: "both", Charts: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"summary.json", "charts/throughput.png", "charts/throughput.svg", "charts/noise_drift.svg", "charts/ttft.png", "charts/tpot.svg", "report.md", "report.html"}
	for _, w := range want {
		if !contains(files, w) {
			t.Errorf("missing %s in %v", w, files)
		}
	}
	png, _ := os.ReadFile(filepath.Join(out, "charts", "throughput.png"))
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Error("throughput.png is not a PNG")
	}
	svg, _ := os.ReadFile(filepath.Join(out, "charts", "ttft.svg"))
	if !bytes.Contains(svg, []byte("<svg")) || !bytes.Contains(svg, []byte(">source: requests.jsonl of measured blocks;")) {
		t.Error("ttft.svg must be SVG and state its source")
	}
	html, _ := os.ReadFile(filepath.Join(out, "report.html"))
	// Throughput, noise and drift, TTFT, TPOT, and GPU power and temperature (the
	// simulated GPUs keep gpu.jsonl beside every block).
	if n := bytes.Count(html, []byte("data:image/png;base64,")); n != 6 || !contains(files, "charts/gpu_power.svg") {
		t.Errorf("report.html embeds %d charts, want 6", n)
	}
	if bytes.Count(html, []byte("<table>")) < 5 {
		t.Error("report.html lacks its tables")
	}
	sj, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := schemas.Validate("summary", sj); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(Options{State: filepath.Join("testdata", "states", "clean"), Out: out, Format: "pdf"}); err == nil {
		t.Error("unknown format accepted")
	}
}

// TestSchemaRejects checks that the schema is not vacuous.
func TestSchemaRejects(t *testing.T) {
	sj, _ := build(t, "failed-cell").SummaryJSON()
	var doc map[string]any
	json.Unmarshal(sj, &doc)
	rows := doc["rows"].([]any)
	for _, x := range rows {
		m := x.(map[string]any)
		if m["disposition"] == "failed" {
			delete(m, "reason")
			break
		}
	}
	b, _ := json.Marshal(doc)
	if err := schemas.Validate("summary", b); err == nil {
		t.Error("a failed row without a reason validated")
	}
	doc2 := map[string]any{}
	json.Unmarshal(sj, &doc2)
	doc2["promotion"].(map[string]any)["promoted"] = true
	b, _ = json.Marshal(doc2)
	if err := schemas.Validate("summary", b); err == nil {
		t.Error("promoted=true with an ineligible comparison validated")
	}
}

func TestGPUObservations(t *testing.T) {
	dir := t.TempDir()
	lines := `{"utc":"2026-10-22T02:00:00Z","device":0,"name":"RTX PRO 6000","driver":"615.71.09","power_w":180.5,"power_limit_w":300,"temperature_c":45,"sm_clock_mhz":2400}
{"utc":"2026-10-22T02:00:01Z","device":0,"power_w":305.2,"power_limit_w":300,"temperature_c":89,"sm_clock_mhz":2100}
{"utc":"2026-10-22T02:00:01Z","device":1,"power_w":200,"temperature_c":50}
`
	p := filepath.Join(dir, "gpu.jsonl")
	os.WriteFile(p, []byte(lines), 0o644)
	s, err := readGPU(p, "block.x")
	if err != nil || len(s) != 3 {
		t.Fatalf("%d samples, %v", len(s), err)
	}
	got := devices(s)
	want := []GPUDevice{
		{Device: "0", Name: "RTX PRO 6000", Driver: "615.71.09", Samples: 2, PowerW: &Range{180.5, 305.2}, TemperatureC: &Range{45, 89}, SMClockMHz: &Range{2100, 2400}, PowerLimitW: []float64{300}},
		{Device: "1", Samples: 1, PowerW: &Range{200, 200}, TemperatureC: &Range{50, 50}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("devices (-want +got):\n%s", d)
	}
	// Attached to a block, the samples give the GPU section, the cell's row and two charts.
	r := build(t, "clean")
	for _, b := range r.ev.blocks {
		b.gpu = nil // replace the simulated telemetry with the samples above
		if b.Addr == `block.primary["candidate/c2/r1"]` {
			b.gpu = s
		}
	}
	r.ev.gpuSamples = s
	if g := r.ev.cellGPU(r.ev.cells[3]); len(g) != 2 || g[0].PowerLimitW[0] != 300 {
		t.Errorf("cell GPU %+v", g)
	}
	charts, err := r.charts()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range charts {
		names = append(names, c.Name)
	}
	if !contains(names, "gpu_power") || !contains(names, "gpu_temperature") {
		t.Errorf("charts %v", names)
	}
	md := string(r.document(nil).markdown())
	if !strings.Contains(md, "| block.primary[\"candidate/c2/r1\"] | 02:00:00–02:00:01 | 0 | 2 | 180.5–305.2 | 45–89 | 2100–2400 | 300 |") {
		t.Errorf("GPU section lacks the block window row:\n%s", md[strings.Index(md, "## GPU"):])
	}
	if !strings.Contains(md, "driver 615.71.09, power limit 300 W") {
		t.Error("result card lacks driver and power limit")
	}
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

func itoa(n int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('0'+n))) }

func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestFastDecodeMatchesJSON holds the fast decoder equal to encoding/json on every
// checked-in record and on shapes the fast path must decline.
func TestFastDecodeMatchesJSON(t *testing.T) {
	var lines [][]byte
	filepath.Walk(filepath.Join("testdata", "states"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Name() == "requests.jsonl" {
			b, _ := os.ReadFile(p)
			lines = append(lines, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
		}
		return nil
	})
	lines = append(lines,
		[]byte(`{"id":"a\"b","index":1,"usage":null,"finish_reason":null,"outcome":"http_error","error":"HTTP 500: {\"error\":1}"}`),
		[]byte(`{"id":"x","index":2,"usage":{"prompt_tokens":3,"completion_tokens":4,"reasoning_tokens":null,"cached_tokens":7},"end_at_ms":1.5e3,"extra":{"a":[1,2]}}`),
		[]byte(` { "id" : "y" , "ttfo_at_ms" : -0.25 } `),
		[]byte(`{"id":"z/1","http_status":200,"outcome":"ok","served_by":"0a1b@2026-01-01T00:00:00.5Z/pid-7"}`),
		[]byte(`{"id":"z","index":3,"token_chunks":12,"outcome":"stream_error","error":"finish_reason abort"}`),
	)
	if len(lines) < 100 {
		t.Fatalf("only %d records to compare", len(lines))
	}
	for _, l := range lines {
		var want, got loadgen.Record
		if err := json.Unmarshal(l, &want); err != nil {
			t.Fatal(err)
		}
		if err := decodeRecord(l, &got); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("%s (-json +fast):\n%s", l, d)
		}
	}
	var r loadgen.Record
	if err := decodeRecord([]byte(`{"id":1`), &r); err == nil {
		t.Error("malformed record accepted")
	}
}
