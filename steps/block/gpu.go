package block

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/rigor-bench/rigor/engine"
	"github.com/rigor-bench/rigor/steps/internal/gpu"
	"github.com/rigor-bench/rigor/steps/internal/target"
	"github.com/zclconf/go-cty/cty"
)

// gpuWatch observes the target host's GPUs around one block. The GPU gate runs in
// startGPU; finish stops sampling and reports a power-limit drift.
type gpuWatch struct {
	stop func() *engine.Result
}

// Defaults of a host with gpus = "sim" that does not size them: seed 001's node,
// tensor parallel over two GPUs held at 300 W.
const (
	defaultSimGPUs   = 2
	defaultSimLimitW = 300
)

// startGPU checks the GPU gates of a block and starts sampling. Hosts that declare
// no gpus have nothing to observe; a gate that checks GPUs on such a host is a
// configuration error rather than a silent pass.
//
// Artefacts: gpu-gate.json (the devices seen before the block and every GPU check),
// gpu.jsonl (one row per device per sample), gpu-summary.json (samples, per-device
// power, limit changes).
func startGPU(ctx context.Context, sc *engine.StepContext, cfg cty.Value, gates []cty.Value) (gpuWatch, *engine.Result) {
	host := hostOf(cfg.GetAttr("target"))
	hostName := target.Str(host, "name")
	var specs []gpu.Gate
	for _, g := range gates {
		spec, err := gpuGate(g)
		if err != nil {
			return gpuWatch{}, failed(engine.ClassConfig, "%v", err)
		}
		if !spec.Empty() {
			specs = append(specs, spec)
		}
	}
	kind := target.Str(host, "gpus")
	if kind == "" {
		if len(specs) > 0 {
			return gpuWatch{}, failed(engine.ClassConfig, "gate %s checks GPUs (power_limit_watts, gpu_count or driver) but host %q declares no gpus; set gpus = \"nvml\", \"dcgm\" or \"sim\" on the host", specs[0].Name, hostName)
		}
		return gpuWatch{}, nil
	}
	src, interval, err := gpuSource(host, hostName, kind)
	if err != nil {
		return gpuWatch{}, failed(engine.ClassConfig, "%v", err)
	}
	sampler, first, err := gpu.StartSampler(src, sc.Path("gpu.jsonl"), interval)
	if err != nil {
		if errors.Is(err, gpu.ErrUnavailable) {
			return gpuWatch{}, failed(engine.ClassToolMissing, "host %s: %v", hostName, err)
		}
		return gpuWatch{}, failed(engine.ClassGate, "host %s: GPUs cannot be read before the block: %v", hostName, err)
	}
	// A block abandoned before finish (an early return, the hard bound) still stops
	// sampling, without a last sample, before its evidence is hashed.
	stopAfter := context.AfterFunc(ctx, sampler.Abort)
	var checks []gpu.Check
	for _, g := range specs {
		checks = append(checks, g.Check(first)...)
	}
	_ = writeJSON(sc.Path("gpu-gate.json"), map[string]any{"host": hostName, "source": src.Kind(), "devices": first, "checks": checks})
	if c, bad := gpu.Failed(checks); bad {
		stopAfter()
		sampler.Abort()
		return gpuWatch{}, failed(engine.ClassGate, "gate %s: %s: %s", c.Gate, c.Check, c.Detail)
	}
	sc.Log.Debug().Str("host", hostName).Str("source", src.Kind()).Int("gpus", len(first)).Str("interval", interval.String()).Msg("GPU sampling started")
	return gpuWatch{stop: func() *engine.Result {
		stopAfter()
		rep, werr := sampler.Stop()
		_ = writeJSON(sc.Path("gpu-summary.json"), rep)
		switch {
		case rep.Drifted():
			return failed(engine.ClassPowerDrift, "GPU power limit changed during the block on host %s: %s (rigor observes power and never sets it)", hostName, rep.DriftText())
		case rep.Incomplete() != "":
			return failed(engine.ClassInstrumentation, "GPU telemetry of host %s is incomplete, so a power-limit drift cannot be ruled out: %s", hostName, rep.Incomplete())
		case werr != nil:
			return failed(engine.ClassInternal, "write gpu.jsonl: %v", werr)
		}
		return nil
	}}, nil
}

func (w gpuWatch) finish() *engine.Result {
	if w.stop == nil {
		return nil
	}
	return w.stop()
}

func failed(class engine.FailureClass, format string, args ...any) *engine.Result {
	r := engine.Failed(class, format, args...)
	return &r
}

// hostOf is the host object of a target object (cty.NilVal when it names none).
func hostOf(t cty.Value) cty.Value {
	if t == cty.NilVal || t.IsNull() || !t.IsKnown() || !t.Type().IsObjectType() || !t.Type().HasAttribute("host") {
		return cty.NilVal
	}
	h := t.GetAttr("host")
	if h.IsNull() || !h.IsKnown() || !h.Type().IsObjectType() {
		return cty.NilVal
	}
	return h
}

// gpuSource builds the host's GPU source from its attributes: gpus, gpu_interval,
// and for "sim" sim_gpus, sim_power_limit_watts, sim_power_drift_at,
// sim_power_drift_watts.
func gpuSource(host cty.Value, name, kind string) (gpu.Source, time.Duration, error) {
	interval := gpu.DefaultInterval
	if s := target.Str(host, "gpu_interval"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Millisecond {
			return nil, 0, fmt.Errorf("host %s: gpu_interval = %q: want a duration of at least 1ms such as \"1s\"", name, s)
		}
		interval = d
	}
	switch kind {
	case "nvml":
		if d := target.Str(host, "docker"); d != "" && remoteDocker(d) {
			return nil, 0, fmt.Errorf("host %s: gpus = \"nvml\" reads the GPUs of the machine rigor runs on, but the host's Docker Engine %s is another machine; run rigor on that host", name, d)
		}
		return gpu.NVML{}, interval, nil
	case "sim":
		c := gpu.SimConfig{
			Devices:     target.Int(host, "sim_gpus", defaultSimGPUs),
			PowerLimitW: target.Num(host, "sim_power_limit_watts", defaultSimLimitW),
			DriftW:      target.Num(host, "sim_power_drift_watts", 0),
		}
		if s := target.Str(host, "sim_power_drift_at"); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil || d <= 0 {
				return nil, 0, fmt.Errorf("host %s: sim_power_drift_at = %q: want a positive duration such as \"30s\" (time after the host's simulated GPUs first appear)", name, s)
			}
			c.DriftAt = d
		}
		src, err := gpu.SimFor(name, c)
		return src, interval, err
	case "dcgm":
		raw := target.Str(host, "dcgm_endpoint")
		if raw == "" {
			return nil, 0, fmt.Errorf("host %s: gpus = \"dcgm\" needs dcgm_endpoint, the dcgm-exporter metrics URL of the node the targets run on (such as \"http://10.0.0.5:9400/metrics\")", name)
		}
		u, err := gpu.ParseDCGMURL(raw)
		if err != nil {
			return nil, 0, fmt.Errorf("host %s: %w", name, err)
		}
		return gpu.DCGM{URL: u}, interval, nil
	}
	return nil, 0, fmt.Errorf("host %s: gpus = %q: want one of %s", name, kind, strings.Join(gpu.Sources(), ", "))
}

// remoteDocker reports whether a Docker Engine URL names another machine.
func remoteDocker(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "unix" || u.Scheme == "npipe" || u.Scheme == "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return false
	}
	ip := net.ParseIP(h)
	return ip == nil || !ip.IsLoopback()
}

// gpuGate reads the GPU attributes of a gate object.
func gpuGate(g cty.Value) (gpu.Gate, error) {
	spec := gpu.Gate{Name: target.Str(g, "name"), Driver: target.Str(g, "driver")}
	if v := target.Num(g, "power_limit_watts", -1); v != -1 {
		if v <= 0 {
			return spec, fmt.Errorf("gate %s: power_limit_watts = %g: want a positive number of watts", spec.Name, v)
		}
		spec.PowerLimitW = &v
	}
	if v := target.Num(g, "gpu_count", -1); v != -1 {
		n := target.Int(g, "gpu_count", -1)
		if n < 0 || float64(n) != v {
			return spec, fmt.Errorf("gate %s: gpu_count = %g: want a whole number", spec.Name, v)
		}
		spec.Count = &n
	}
	return spec, nil
}
