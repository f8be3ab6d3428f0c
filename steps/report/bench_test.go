package report

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
)

// makeBenchState writes a state directory with n request records spread over a
// 2-arm × 2-concurrency matrix (one priming block and three measured repetitions
// per cell: 16 blocks), with a real hash-chained journal, plan and manifest. It
// streams every file, so generating does not hold the records either.
func makeBenchState(tb testing.TB, dir string, n int) {
	tb.Helper()
	must := func(err error) {
		if err != nil {
			tb.Fatal(err)
		}
	}
	arms, concs := []string{"incumbent", "candidate"}, []int{1, 4}
	type blk struct {
		addr, arm, cell, dir string
		conc, rep            int
	}
	var blocks []blk
	var insts []any
	for _, a := range arms {
		for _, c := range concs {
			for rep := 0; rep <= 3; rep++ {
				key := fmt.Sprintf("%s/c%d/r%d", a, c, rep)
				phase := "measured"
				if rep == 0 {
					key, phase = fmt.Sprintf("%s/c%d/prime", a, c), "priming"
				}
				addr := `block.primary["` + key + `"]`
				b := blk{addr: addr, arm: a, cell: fmt.Sprintf("%s/c%d", a, c), conc: c, rep: rep, dir: "attempts/block.primary/" + key + "/1"}
				blocks = append(blocks, b)
				insts = append(insts, map[string]any{
					"addr": addr, "type": "block", "arm": a, "cell": b.cell, "depends_on": []string{}, "source": strings.Repeat("0", 64),
					"meta": map[string]any{"always": false, "phase": phase},
					"config": map[string]any{"arm": a, "cell": b.cell, "concurrency": c, "repetition": rep, "requests": n / 16,
						"target":   map[string]any{"name": a, "container": "bench-" + a},
						"workload": map[string]any{"name": "capacity", "corpus": "synthetic-summary", "nominal_context": 10240, "max_tokens": 2048, "temperature": 1, "top_p": 0.95}},
				})
			}
		}
	}
	planJSON, err := plans.CanonicalJSON(map[string]any{"campaign": map[string]any{"name": "bench"}, "instances": insts})
	must(err)
	must(os.MkdirAll(filepath.Join(dir, "plan"), 0o755))
	// The plan files and their hashes in the plan_frozen record, as freeze writes them.
	var manifest engine.Manifest
	var planFiles []engine.Artefact
	for _, f := range []struct {
		name string
		b    []byte
	}{{"plan.json", planJSON}, {"plan.sha256", []byte(plans.SHA256Hex(planJSON) + "\n")}} {
		name, b := f.name, f.b
		must(os.WriteFile(filepath.Join(dir, "plan", name), b, 0o644))
		a := engine.Artefact{Path: "plan/" + name, Size: int64(len(b)), SHA256: plans.SHA256Hex(b)}
		planFiles = append(planFiles, a)
		manifest.Artefacts = append(manifest.Artefacts, engine.ManifestEntry{Artefact: a})
	}
	clock := engine.NewFakeClock(time.Date(2026, 10, 22, 2, 0, 0, 0, time.UTC))
	j, err := engine.OpenJournal(filepath.Join(dir, engine.JournalFile), clock)
	must(err)
	defer j.Close()
	_, err = j.Append(engine.Record{Kind: engine.KindPlanFrozen, PlanSHA256: plans.SHA256Hex(planJSON), Artefacts: planFiles})
	must(err)
	rng := rand.New(rand.NewPCG(1, 2))
	per := n / len(blocks)
	for bi, b := range blocks {
		if bi == len(blocks)-1 {
			per = n - per*(len(blocks)-1)
		}
		_, err := j.Append(engine.Record{Kind: engine.KindStepStart, Step: b.addr, Attempt: 1, Dir: b.dir})
		must(err)
		must(os.MkdirAll(filepath.Join(dir, b.dir), 0o755))
		f, err := os.Create(filepath.Join(dir, b.dir, "requests.jsonl"))
		must(err)
		h := sha256.New()
		w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
		var size int64
		slot := make([]float64, b.conc)
		buf := make([]byte, 0, 1024)
		for i := 0; i < per; i++ {
			s := i % b.conc
			sched := slot[s]
			ttfo := sched + 800 + rng.Float64()*400
			ttft := ttfo + 1000 + rng.Float64()*2000
			comp := 100 + rng.IntN(1900)
			last := ttfo + float64(comp)*(5+rng.Float64())
			slot[s] = last + 0.05
			outcome, finish, vis := "ok", "stop", true
			if rng.IntN(5000) == 0 {
				outcome, finish, vis = "no_visible_output", "length", false
			}
			f3 := func(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
			buf = buf[:0]
			buf = fmt.Appendf(buf, `{"id":"bench/block.primary/%s/%d/%d","index":%d,"repetition":%d,"concurrency":%d,"nominal_context":10240,`, b.cell, b.rep, i, i, b.rep, b.conc)
			buf = fmt.Appendf(buf, `"scheduled_at_ms":%s,"send_at_ms":%s,"headers_at_ms":%s,"first_byte_at_ms":%s,"ttfo_at_ms":%s,`, f3(sched), f3(sched+0.01), f3(ttfo-1), f3(ttfo), f3(ttfo))
			if vis {
				buf = fmt.Appendf(buf, `"ttft_visible_at_ms":%s,`, f3(ttft))
			} else {
				buf = append(buf, `"ttft_visible_at_ms":null,`...)
			}
			buf = fmt.Appendf(buf, `"last_token_at_ms":%s,"end_at_ms":%s,"schedule_lag_ms":0.01,"http_status":200,`, f3(last), f3(last))
			buf = fmt.Appendf(buf, `"usage":{"prompt_tokens":%d,"completion_tokens":%d,"reasoning_tokens":%d,"cached_tokens":%d},"finish_reason":"%s","chunks":%d,"content_chunks":%d,"reasoning_chunks":%d,"outcome":"%s"}`+"\n",
				7680+rng.IntN(4), comp, comp/2, 7680, finish, comp, comp/2, comp/2, outcome)
			nw, err := w.Write(buf)
			must(err)
			size += int64(nw)
		}
		must(w.Flush())
		must(f.Close())
		art := engine.Artefact{Path: b.dir + "/requests.jsonl", Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
		manifest.Artefacts = append(manifest.Artefacts, engine.ManifestEntry{Artefact: art, Step: b.addr, Attempt: 1})
		out, _ := json.Marshal(map[string]any{"requests": per})
		_, err = j.Append(engine.Record{Kind: engine.KindStepEnd, Step: b.addr, Attempt: 1, Dir: b.dir, Status: engine.StatusSucceeded,
			Outputs: out, OutputsType: json.RawMessage(`["object",{"requests":"number"}]`), Artefacts: []engine.Artefact{art}})
		must(err)
	}
	_, err = j.Append(engine.Record{Kind: engine.KindCampaignEnd, Status: "completed"})
	must(err)
	// manifest.json as the engine writes it: sorted by path, newline-terminated.
	sort.Slice(manifest.Artefacts, func(a, b int) bool { return manifest.Artefacts[a].Path < manifest.Artefacts[b].Path })
	mb, _ := json.MarshalIndent(manifest, "", "  ")
	must(os.WriteFile(filepath.Join(dir, engine.ManifestFile), append(mb, '\n'), 0o644))
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// vmHWM is the process's peak resident set (Linux), in bytes.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// BenchmarkReport1M times the full report (summary, charts, md and html) over a
// state directory with 1,000,000 request records, and reports the peak RSS of the
// process. The bound: under 10 s and under 1 GiB.
func BenchmarkReport1M(b *testing.B) {
	n := 1_000_000
	if s := os.Getenv("RIGOR_BENCH_RECORDS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	dir := b.TempDir()
	if d := os.Getenv("RIGOR_BENCH_DIR"); d != "" {
		dir = d // keep the state, e.g. to time the CLI: rigor report --state $RIGOR_BENCH_DIR
		must(b, os.MkdirAll(dir, 0o755))
	}
	start := time.Now()
	makeBenchState(b, dir, n)
	b.Logf("generated %d records in %s", n, time.Since(start).Round(time.Millisecond))
	runtime.GC()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		r, err := Build(dir)
		if err != nil {
			b.Fatal(err)
		}
		tBuild := time.Since(t0)
		if _, err := r.Write(Options{State: dir, Out: filepath.Join(dir, "report"), Format: "both", Charts: true}); err != nil {
			b.Fatal(err)
		}
		b.Logf("build (stream + summary) %s, write (charts + documents) %s", tBuild.Round(time.Millisecond), (time.Since(t0) - tBuild).Round(time.Millisecond))
		st := r.Summary.Statistics
		if st.AttemptedRequests != n || len(r.Summary.Integrity) != 0 {
			b.Fatalf("attempted %d of %d, integrity %v", st.AttemptedRequests, n, r.Summary.Integrity)
		}
		b.ReportMetric(time.Since(t0).Seconds(), "s/report")
	}
	b.ReportMetric(float64(vmHWM())/(1<<20), "peak-RSS-MiB")
}

// TestBenchStateReports runs the generator small, so the benchmark's state stays
// a valid state directory (the journal verifies and the report counts every record).
func TestBenchStateReports(t *testing.T) {
	dir := t.TempDir()
	makeBenchState(t, dir, 1600)
	if p, err := engine.Verify(dir); err != nil || len(p) != 0 {
		t.Fatalf("verify: %v %v", p, err)
	}
	r, err := Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := r.Summary.Statistics
	if st.AttemptedRequests != 1600 || st.MeasuredAttempted != 1200 || st.RequiredCells != 4 {
		t.Fatalf("statistics %+v", st)
	}
}
