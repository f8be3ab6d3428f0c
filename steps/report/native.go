package report

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
)

// engineMax is the most running and waiting requests the engine's own gauges showed
// during a cell's measured blocks (native-samples.jsonl, written by the block step).
type engineMax struct {
	running, waiting int
	samples          int
}

// cellEngineMax reads the gauge samples of every measured block of a cell. ok is
// false when no block kept samples, so the report says "not sampled" rather than 0.
func (ev *evidence) cellEngineMax(c *cellRef) (engineMax, bool) {
	var m engineMax
	for _, b := range c.Blocks {
		if !b.inStatistics() {
			continue
		}
		a, ok := b.artefact("native-samples.jsonl")
		if !ok {
			continue
		}
		f, err := os.Open(filepath.Join(ev.dir, filepath.FromSlash(a.Path)))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var s struct {
				Running *float64 `json:"running"`
				Waiting *float64 `json:"waiting"`
			}
			if json.Unmarshal(sc.Bytes(), &s) != nil || s.Running == nil || s.Waiting == nil {
				continue
			}
			m.samples++
			m.running = max(m.running, int(math.Round(*s.Running)))
			m.waiting = max(m.waiting, int(math.Round(*s.Waiting)))
		}
		f.Close()
	}
	return m, m.samples > 0
}
