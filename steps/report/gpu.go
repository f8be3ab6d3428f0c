package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"time"
)

// Range is a min–max observation.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

func (r *Range) add(v float64) *Range {
	if r == nil {
		return &Range{Min: v, Max: v}
	}
	r.Min, r.Max = math.Min(r.Min, v), math.Max(r.Max, v)
	return r
}

// GPUDevice is what the samples of one device say over a set of block windows.
type GPUDevice struct {
	Device       string    `json:"device"`
	Name         string    `json:"name,omitempty"`
	Driver       string    `json:"driver,omitempty"`
	Samples      int       `json:"samples"`
	PowerW       *Range    `json:"power_w,omitempty"`
	TemperatureC *Range    `json:"temperature_c,omitempty"`
	SMClockMHz   *Range    `json:"sm_clock_mhz,omitempty"`
	MemClockMHz  *Range    `json:"mem_clock_mhz,omitempty"`
	PowerLimitW  []float64 `json:"power_limit_w,omitempty"` // every distinct limit seen, sorted
}

type gpuSample struct {
	T       time.Time
	HasT    bool
	Device  string
	Name    string
	Driver  string
	Power   *float64
	Limit   *float64
	Temp    *float64
	SMClk   *float64
	MemClk  *float64
	Source  string // "sim" or "nvml", as the sampler wrote it
	Block   string
	BlockIx int
}

// readGPU reads one gpu.jsonl; unknown keys are ignored, absent ones stay nil.
func readGPU(path, block string) ([]gpuSample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []gpuSample
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			return out, fmt.Errorf("%s: %w", path, err)
		}
		s := gpuSample{Block: block}
		s.Device = firstStr(m, "device", "index", "gpu", "uuid")
		s.Name = firstStr(m, "name")
		s.Source = firstStr(m, "source")
		s.Driver = firstStr(m, "driver", "driver_version")
		for _, k := range []string{"utc", "time", "t"} {
			if v, ok := m[k].(string); ok {
				if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
					s.T, s.HasT = t.UTC(), true
					break
				}
			}
		}
		s.Power = firstNum(m, "power_w", "power_watts")
		s.Limit = firstNum(m, "power_limit_w", "enforced_power_limit_w", "power_limit_watts")
		s.Temp = firstNum(m, "temperature_c", "temp_c")
		s.SMClk = firstNum(m, "sm_clock_mhz", "clock_sm_mhz")
		s.MemClk = firstNum(m, "mem_clock_mhz", "clock_mem_mhz")
		out = append(out, s)
	}
	return out, sc.Err()
}

func firstStr(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatFloat(v, 'g', -1, 64)
		}
	}
	return ""
}

func firstNum(m map[string]any, keys ...string) *float64 {
	for _, k := range keys {
		if v, ok := m[k].(float64); ok {
			return &v
		}
	}
	return nil
}

// devices reduces samples to per-device observations, sorted by device.
func devices(samples []gpuSample) []GPUDevice {
	by := map[string]*GPUDevice{}
	limits := map[string]map[float64]bool{}
	for _, s := range samples {
		d := by[s.Device]
		if d == nil {
			d = &GPUDevice{Device: s.Device}
			by[s.Device] = d
			limits[s.Device] = map[float64]bool{}
		}
		d.Samples++
		if s.Name != "" {
			d.Name = s.Name
		}
		if s.Driver != "" {
			d.Driver = s.Driver
		}
		if s.Power != nil {
			d.PowerW = d.PowerW.add(*s.Power)
		}
		if s.Temp != nil {
			d.TemperatureC = d.TemperatureC.add(*s.Temp)
		}
		if s.SMClk != nil {
			d.SMClockMHz = d.SMClockMHz.add(*s.SMClk)
		}
		if s.MemClk != nil {
			d.MemClockMHz = d.MemClockMHz.add(*s.MemClk)
		}
		if s.Limit != nil {
			limits[s.Device][*s.Limit] = true
		}
	}
	var out []GPUDevice
	for _, k := range slices.Sorted(maps.Keys(by)) {
		d := by[k]
		for l := range limits[k] {
			d.PowerLimitW = append(d.PowerLimitW, l)
		}
		sort.Float64s(d.PowerLimitW)
		out = append(out, *d)
	}
	return out
}

// loadGPU reads the gpu.jsonl of every block attempt that kept one; the settling
// attempt's samples are the block's.
func (ev *evidence) loadGPU() {
	for i, b := range ev.blocks {
		for _, at := range b.attempts {
			a, ok := at.artefact("gpu.jsonl")
			if !ok {
				continue
			}
			s, err := readGPU(filepath.Join(ev.dir, filepath.FromSlash(a.Path)), b.Addr)
			if err != nil {
				ev.problems = append(ev.problems, err.Error())
			}
			for j := range s {
				s[j].BlockIx = i
			}
			at.gpu = s
			if at == b.settling() {
				b.gpu = s
				ev.gpuSamples = append(ev.gpuSamples, s...)
			}
		}
	}
}

// cellGPU is the observation over the cell's measured blocks.
func (ev *evidence) cellGPU(c *cellRef) []GPUDevice {
	var s []gpuSample
	for _, b := range c.Blocks {
		if b.inStatistics() {
			s = append(s, b.gpu...)
		}
	}
	if len(s) == 0 {
		return nil
	}
	return devices(s)
}
