package gpu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"sync"
	"time"
)

// SimConfig describes the simulated GPUs of a host.
type SimConfig struct {
	Devices     int     // how many
	PowerLimitW float64 // the management and enforced limit of every device
	// DriftAt, when > 0, changes every device's limit to DriftW that long after the
	// host's simulated GPUs were created: an operator or a daemon changing the limit
	// in the middle of a campaign.
	DriftAt time.Duration
	DriftW  float64
	// Names are what errors call the settings; nil: the plan's host attributes.
	Names *SimNames
}

// SimNames name SimConfig's settings where they were given: a plan's host block, or
// a command line's flags.
type SimNames struct{ Devices, PowerLimitW, DriftAt, DriftW string }

// HostAttributes are the host block's names for the simulated GPUs' settings.
var HostAttributes = SimNames{Devices: "sim_gpus", PowerLimitW: "sim_power_limit_watts", DriftAt: "sim_power_drift_at", DriftW: "sim_power_drift_watts"}

func (c SimConfig) validate() error {
	n := HostAttributes
	if c.Names != nil {
		n = *c.Names
	}
	if c.Devices < 1 || c.Devices > 64 {
		return fmt.Errorf("%s = %d: want 1 to 64 simulated GPUs", n.Devices, c.Devices)
	}
	if c.PowerLimitW <= 0 || c.PowerLimitW > 2000 {
		return fmt.Errorf("%s = %g: want a limit in (0, 2000] W", n.PowerLimitW, c.PowerLimitW)
	}
	if c.DriftAt < 0 {
		return fmt.Errorf("%s = %s: want a time after start", n.DriftAt, c.DriftAt)
	}
	if c.DriftAt > 0 && (c.DriftW <= 0 || c.DriftW > 2000) {
		return fmt.Errorf("%s = %g: want a limit in (0, 2000] W when %s is set", n.DriftW, c.DriftW, n.DriftAt)
	}
	return nil
}

// Sim is the simulated GPUs of one host.
type Sim struct {
	host  string
	cfg   SimConfig
	epoch time.Time

	mu     sync.Mutex
	limits []float64
	drifts []drift
}

type drift struct {
	at      time.Time
	index   int // -1: every device
	watts   float64
	applied bool
}

var _ Source = (*Sim)(nil)

var (
	simMu    sync.Mutex
	simHosts = map[string]*Sim{}
)

// SimFor returns the simulated GPUs of a host, creating them on first use. A later
// call with the same configuration returns the same devices (with any drift already
// applied: rigor never restores a limit); a different configuration replaces them, as
// if the host were another machine.
func SimFor(host string, cfg SimConfig) (*Sim, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("host %s: %w", host, err)
	}
	simMu.Lock()
	defer simMu.Unlock()
	if s, ok := simHosts[host]; ok && s.cfg == cfg {
		return s, nil
	}
	s := &Sim{host: host, cfg: cfg, epoch: time.Now()}
	for range cfg.Devices {
		s.limits = append(s.limits, cfg.PowerLimitW)
	}
	if cfg.DriftAt > 0 {
		s.drifts = append(s.drifts, drift{at: s.epoch.Add(cfg.DriftAt), index: -1, watts: cfg.DriftW})
	}
	simHosts[host] = s
	return s, nil
}

// LookupSim returns a host's simulated GPUs if SimFor created them.
func LookupSim(host string) (*Sim, bool) {
	simMu.Lock()
	defer simMu.Unlock()
	s, ok := simHosts[host]
	return s, ok
}

// Kind is "sim".
func (*Sim) Kind() string { return "sim" }

// InjectDrift changes the limit of device index (-1: every device) to watts at the
// given time; a time in the past applies at the next snapshot.
func (s *Sim) InjectDrift(at time.Time, index int, watts float64) error {
	if index < -1 || index >= s.cfg.Devices {
		return fmt.Errorf("host %s has simulated GPUs 0..%d, not %d", s.host, s.cfg.Devices-1, index)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drifts = append(s.drifts, drift{at: at, index: index, watts: watts})
	return nil
}

// Simulated H200 constants.
const (
	simName       = "NVIDIA H200 (simulated)"
	simDriver     = "570.86.15-sim"
	simMemTotal   = 143771 << 20 // bytes, as nvidia-smi shows an H200
	simIdleW      = 75.0
	simMaxSMMHz   = 1980
	simMemMHz     = 3201
	simPeriod     = 7 * time.Second // one load phase: ramp up, plateau at the cap, ramp down
	simUtilMemory = 0.9             // vLLM's default gpu_memory_utilization
)

// Snapshot returns every device: power follows a periodic load phase (offset per
// device) and never exceeds the enforced limit, temperature follows power, the SM
// clock drops and sw_power_cap is set when power presses against the limit.
func (s *Sim) Snapshot() ([]Device, error) {
	now := time.Now()
	s.mu.Lock()
	for i := range s.drifts {
		d := &s.drifts[i]
		if d.applied || now.Before(d.at) {
			continue
		}
		d.applied = true
		for k := range s.limits {
			if d.index == -1 || d.index == k {
				s.limits[k] = d.watts
			}
		}
	}
	limits := append([]float64(nil), s.limits...)
	s.mu.Unlock()

	t := now.Sub(s.epoch).Seconds()
	out := make([]Device, len(limits))
	for i, limit := range limits {
		phase := 2*math.Pi*t/simPeriod.Seconds() + 0.7*float64(i)
		load := 0.5 + 0.5*math.Sin(phase) // 0..1
		demand := simIdleW + load*(1.15*limit-simIdleW)
		power := math.Min(demand, 0.985*limit)
		var bits uint64
		sm := simMaxSMMHz
		if demand >= 0.985*limit {
			bits |= 0x4 // sw_power_cap
			over := math.Min((demand-0.985*limit)/limit, 0.3)
			sm = simMaxSMMHz - int(math.Round(over*2000))
		}
		if load < 0.05 {
			bits |= 0x1 // gpu_idle
		}
		temp := 30 + 0.12*power + 2*math.Sin(phase-0.5)
		used := uint64(math.Round(simUtilMemory * float64(simMemTotal)))
		out[i] = Device{
			Index: i, UUID: simUUID(s.host, i), Name: simName, Driver: simDriver,
			PowerLimitW: limit, EnforcedPowerLimitW: limit, PowerW: round(power, 3),
			TemperatureC: round(temp, 0), SMClockMHz: sm, MemClockMHz: simMemMHz,
			ThrottleReasons: bits, ThrottleNames: ThrottleNames(bits),
			MemoryTotalBytes: simMemTotal, MemoryUsedBytes: used, MemoryFreeBytes: simMemTotal - used,
		}
	}
	return out, nil
}

func round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

// simUUID is stable per host and index, shaped like NVML's GPU-8-4-4-4-12.
func simUUID(host string, i int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "rigor-sim-gpu\x00%s\x00%d", host, i))
	h := hex.EncodeToString(sum[:16])
	return "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}
