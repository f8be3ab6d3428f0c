package gpu

import (
	"fmt"
	"math"
	"strings"

	"github.com/rigor-bench/rigor/steps/internal/nvml"
)

// Device is one GPU at one moment. Watts, degrees Celsius, MHz and bytes.
type Device struct {
	Index               int      `json:"index"`
	UUID                string   `json:"uuid"`
	Name                string   `json:"name"`
	Driver              string   `json:"driver"`
	PowerLimitW         float64  `json:"power_limit_w"`
	EnforcedPowerLimitW float64  `json:"enforced_power_limit_w"`
	PowerW              float64  `json:"power_w"`
	TemperatureC        float64  `json:"temperature_c"`
	SMClockMHz          int      `json:"sm_clock_mhz"`
	MemClockMHz         int      `json:"mem_clock_mhz"`
	ThrottleReasons     uint64   `json:"throttle_reasons"`
	ThrottleNames       []string `json:"throttle_reason_names,omitempty"`
	MemoryTotalBytes    uint64   `json:"memory_total_bytes"`
	MemoryUsedBytes     uint64   `json:"memory_used_bytes"`
	MemoryFreeBytes     uint64   `json:"memory_free_bytes"`
	Unsupported         []string `json:"unsupported,omitempty"`
}

// Source is where snapshots come from.
type Source interface {
	// Kind is "nvml", "dcgm" or "sim".
	Kind() string
	// Snapshot reads every device, in index order.
	Snapshot() ([]Device, error)
}

// Throttle (clock event) reason bits, as NVML defines them.
var throttleNames = []struct {
	bit  uint64
	name string
}{
	{0x1, "gpu_idle"}, {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},
	{0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal_slowdown"},
	{0x40, "hw_thermal_slowdown"}, {0x80, "hw_power_brake_slowdown"},
	{0x100, "display_clock_setting"},
}

// ThrottleNames decodes throttle reason bits, in bit order.
func ThrottleNames(bits uint64) []string {
	var out []string
	for _, t := range throttleNames {
		if bits&t.bit != 0 {
			out = append(out, t.name)
		}
	}
	return out
}

// Sources lists the GPU sources a host may name (its gpus attribute), sorted.
func Sources() []string { return []string{DCGM{}.Kind(), NVML{}.Kind(), (*Sim)(nil).Kind()} }

// NVML reads the machine's GPUs through package nvml.
type NVML struct{}

var _ Source = NVML{}

// Kind is "nvml".
func (NVML) Kind() string { return "nvml" }

// Snapshot reads every device; without a driver the error is nvml's one sentence.
func (NVML) Snapshot() ([]Device, error) {
	s, err := nvml.Read()
	if err != nil {
		return nil, err
	}
	out := make([]Device, 0, len(s.Devices))
	for _, d := range s.Devices {
		out = append(out, Device{
			Index: d.Index, UUID: d.UUID, Name: d.Name, Driver: s.DriverVersion,
			PowerLimitW: mw(d.PowerLimitMW), EnforcedPowerLimitW: mw(d.EnforcedPowerLimitMW), PowerW: mw(d.PowerUsageMW),
			TemperatureC: float64(d.TemperatureC), SMClockMHz: int(d.SMClockMHz), MemClockMHz: int(d.MemClockMHz),
			ThrottleReasons: d.ThrottleReasons, ThrottleNames: ThrottleNames(d.ThrottleReasons),
			MemoryTotalBytes: d.MemoryTotal, MemoryUsedBytes: d.MemoryUsed, MemoryFreeBytes: d.MemoryFree,
			Unsupported: d.Unsupported,
		})
	}
	return out, nil
}

func mw(v uint32) float64 { return float64(v) / 1000 }

// ErrUnavailable is nvml.ErrUnavailable: NVML cannot be used here.
var ErrUnavailable = nvml.ErrUnavailable

// limitTolerance is how far two limits may differ and still be the same limit.
const limitTolerance = 0.5

// SameLimit reports whether two limits in watts are the same (NVML reports mW).
func SameLimit(a, b float64) bool { return math.Abs(a-b) < limitTolerance }

// Label names a device in messages: "GPU 1 (GPU-3f…)".
func (d Device) Label() string {
	u := d.UUID
	if len(u) > 12 {
		u = u[:12] + "…"
	}
	return fmt.Sprintf("GPU %d (%s)", d.Index, u)
}

// DriverMatches reports whether a driver version satisfies a gate's driver: an exact
// match, or a match of every dot-separated component the gate names ("570" and
// "570.86" both accept "570.86.15").
func DriverMatches(want, got string) bool {
	if want == got {
		return true
	}
	w, g := strings.Split(want, "."), strings.Split(got, ".")
	if len(w) > len(g) {
		return false
	}
	for i := range w {
		if w[i] != g[i] {
			return false
		}
	}
	return true
}
