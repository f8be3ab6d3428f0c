package steps

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/sim"
)

// SimOptions configure a standalone simulator server (`rigor sim serve`).
type SimOptions struct {
	Profile        string
	Listen         string
	Model          string
	ReasoningField string
	Engine         string // "vllm" (default) or "sglang": metric names and cache reset path
	TimeScale      float64
	Seed           uint64
	// TokensPerChunk is how many tokens one SSE event carries at most (speculative
	// decoding and stream batching send several); 0 means 1.
	TokensPerChunk int
	// AllocateMB, when positive, makes the server allocate and touch that many MiB
	// AllocateAfter after it starts and hold them: inside a container with a smaller
	// memory limit, the kernel OOM-kills it (the OOM test of the Docker runtime).
	AllocateMB    int
	AllocateAfter time.Duration
}

// SimProfiles lists the simulator's built-in profiles.
func SimProfiles() []string { return sim.ProfileNames() }

// SimEngines lists the serving engines the simulator imitates (--engine).
func SimEngines() []string { return []string{sim.EngineVLLM, sim.EngineSGLang} }

// ServeSimulator starts the simulator on a real socket and returns its URL and a
// function that stops it.
func ServeSimulator(o SimOptions) (string, func() error, error) {
	prof, err := sim.LookupProfile(o.Profile)
	if err != nil {
		return "", nil, err
	}
	r, err := sim.Listen(o.Listen, sim.Config{Profile: prof, ModelName: o.Model, Seed: o.Seed, TimeScale: o.TimeScale, ReasoningField: o.ReasoningField, Engine: o.Engine, TokensPerChunk: o.TokensPerChunk})
	if err != nil {
		return "", nil, err
	}
	if o.AllocateMB > 0 {
		go func() {
			time.Sleep(o.AllocateAfter)
			fmt.Fprintf(os.Stderr, "allocating %d MiB\n", o.AllocateMB)
			Allocate(o.AllocateMB)
			fmt.Fprintf(os.Stderr, "allocated %d MiB\n", o.AllocateMB)
		}()
	}
	return r.URL(), r.Close, nil
}

var (
	ballastMu sync.Mutex
	ballast   [][]byte
)

// Allocate allocates mb MiB, writes to every page so the memory is resident, and
// keeps it for the life of the process.
func Allocate(mb int) {
	for i := 0; i < mb; i++ {
		b := make([]byte, 1<<20)
		for k := 0; k < len(b); k += 4096 {
			b[k] = byte(k + 1)
		}
		ballastMu.Lock()
		ballast = append(ballast, b)
		ballastMu.Unlock()
	}
}
