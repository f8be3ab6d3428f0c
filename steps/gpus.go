package steps

import (
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/rigor-bench/rigor/steps/internal/gpu"
)

// GPUDevice is one GPU as `rigor gpus` shows it.
type GPUDevice = gpu.Device

// ErrGPUsUnavailable is returned (wrapped in one sentence) when NVML cannot be used.
var ErrGPUsUnavailable = gpu.ErrUnavailable

// GPUQuery says where `rigor gpus` reads GPUs from: the same three sources a host's
// gpus attribute names.
type GPUQuery struct {
	Kind         string // "nvml", "dcgm" or "sim"
	DCGMEndpoint string // kind "dcgm": the exporter's metrics URL
	SimDevices   int    // kind "sim"
	SimLimitW    float64
	SimHost      string    // kind "sim": the campaign host whose simulated GPUs to show ("" = a stand-alone one)
	SimNames     *SimNames // what errors call the sim settings (the command line's flags)
}

// ReadGPUs reads the GPUs the query names, in index order.
func ReadGPUs(q GPUQuery) ([]GPUDevice, error) {
	switch q.Kind {
	case "nvml":
		return gpu.NVML{}.Snapshot()
	case "dcgm":
		u, err := gpu.ParseDCGMURL(q.DCGMEndpoint)
		if err != nil {
			return nil, err
		}
		return gpu.DCGM{URL: u}.Snapshot()
	case "sim":
		// A sim host's GPUs' UUIDs derive from its name: the same name shows the
		// same GPUs a campaign's blocks on that host record.
		host := q.SimHost
		if host == "" {
			host = "rigor-gpus"
		}
		s, err := gpu.SimFor(host, gpu.SimConfig{Devices: q.SimDevices, PowerLimitW: q.SimLimitW, Names: q.SimNames})
		if err != nil {
			return nil, err
		}
		return s.Snapshot()
	}
	return nil, fmt.Errorf("GPU source %q: want nvml, dcgm or sim", q.Kind)
}

// SimDCGMConfig sizes the simulated GPUs a stand-in DCGM exporter serves.
type SimDCGMConfig struct {
	Host        string // names the simulated node; its GPUs' UUIDs derive from it
	Devices     int
	PowerLimitW float64
	DriftAt     time.Duration // every limit becomes DriftW this long after start; 0: never
	DriftW      float64
	Names       *SimNames // what errors call the settings (the command line's flags)
}

// SimNames name the simulated GPUs' settings in errors.
type SimNames = gpu.SimNames

// SimDCGMHandler serves simulated GPUs as dcgm-exporter does at /metrics, so a
// host with gpus = "dcgm" can be tested on a machine without GPUs. Every scrape is
// a fresh snapshot of the simulated devices (power follows a load phase; the
// limit drifts when configured).
func SimDCGMHandler(c SimDCGMConfig) (http.Handler, error) {
	src, err := gpu.SimFor("dcgm:"+c.Host, gpu.SimConfig{Devices: c.Devices, PowerLimitW: c.PowerLimitW, DriftAt: c.DriftAt, DriftW: c.DriftW, Names: c.Names})
	if err != nil {
		return nil, err
	}
	hostname := c.Host
	if hostname == "" {
		hostname, _ = os.Hostname()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		devs, err := src.Snapshot()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = gpu.WriteDCGM(w, hostname, devs)
	})
	return mux, nil
}
