package engine_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/plans"
)

// BenchmarkNoOpStep measures the engine's own cost per step: evaluation, input
// hashing, two fsynced journal records, artefact hashing and the manifest.
func BenchmarkNoOpStep(b *testing.B) {
	const steps = 200
	var src strings.Builder
	src.WriteString(header)
	for i := 0; i < steps; i++ {
		fmt.Fprintf(&src, "step \"probe\" \"s%03d\" {}\n", i)
	}
	dir := b.TempDir()
	clock := engine.NewFakeClock(time.Date(2026, 10, 22, 2, 0, 0, 0, time.UTC))
	h := &harness{dir: dir, clock: clock, probe: newProbe(clock)}
	h.probe.started = make(chan string, steps*(b.N+1))
	h.reg = engine.Registry{"probe": h.probe}
	path := filepath.Join(dir, "campaign.hcl")
	if err := os.WriteFile(path, []byte(src.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	p, _, diags := plans.Load(path, plans.Options{StepTypes: h.reg.Types(), Env: []string{}})
	if diags.HasErrors() {
		b.Fatal(diags)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.state = filepath.Join(h.dir, fmt.Sprintf("state%d", i))
		h.probe.order = nil
		start := time.Now()
		if _, err := h.apply(context.Background(), p); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/steps/1000, "ms/step")
	}
}

// BenchmarkHashGiB compares rigor's file hashing with raw crypto/sha256 over the
// same 1 GiB file in the same run; the figure to read is the ratio.
func BenchmarkHashGiB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.bin")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 31)
	}
	for i := 0; i < 1024; i++ {
		if _, err := f.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	raw := func() time.Duration {
		start := time.Now()
		f, _ := os.Open(path)
		h := sha256.New()
		_, _ = io.Copy(h, f)
		f.Close()
		return time.Since(start)
	}
	ours := func() time.Duration {
		start := time.Now()
		if _, err := plans.FileSHA256(path); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	raw() // warm the page cache
	b.ResetTimer()
	var tRaw, tOurs time.Duration
	for i := 0; i < b.N; i++ {
		tRaw += raw()
		tOurs += ours()
	}
	b.ReportMetric(float64(tRaw)/float64(tOurs), "ratio_vs_raw_sha256")
	b.ReportMetric(float64(1<<30)*float64(b.N)/tOurs.Seconds()/1e6, "MB/s")
}

var _ = engine.JournalFile
