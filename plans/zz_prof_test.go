package plans_test

import (
	"os"
	"runtime"
	"runtime/pprof"
	"testing"

	"github.com/rigor-bench/rigor/plans"
	"github.com/rigor-bench/rigor/steps"
)

func BenchmarkProfLarge(b *testing.B) {
	large, _, want := laneCampaign(b, 10<<20)
	src, _ := os.ReadFile(large)
	os.WriteFile("/tmp/lanes10.hcl", src, 0o644)
	for b.Loop() {
		validate(b, large, want)
	}
}

func TestProfLive(t *testing.T) {
	runtime.MemProfileRate = 4096
	p := mustLoad(t, "/tmp/lanes10.hcl", plans.Options{StepTypes: steps.Registry().Types(), Env: []string{}})
	runtime.GC()
	f, _ := os.Create("/tmp/live.prof")
	pprof.Lookup("heap").WriteTo(f, 0)
	f.Close()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("live %d MB, instances %d", ms.HeapAlloc>>20, len(p.Instances))
	runtime.KeepAlive(p)
}
