package steps

import (
	"github.com/rigor-bench/rigor/steps/internal/gpu"
)

// GPUDevice is one GPU as `rigor gpus` shows it.
type GPUDevice = gpu.Device

// ErrGPUsUnavailable is returned (wrapped in one sentence) when NVML cannot be used.
var ErrGPUsUnavailable = gpu.ErrUnavailable

// ReadGPUs reads the GPUs of this machine through NVML (kind "nvml") or simulated
// ones (kind "sim", with simDevices devices at simLimitW).
func ReadGPUs(kind string, simDevices int, simLimitW float64) ([]GPUDevice, error) {
	var src gpu.Source = gpu.NVML{}
	if kind == "sim" {
		s, err := gpu.SimFor("rigor-gpus", gpu.SimConfig{Devices: simDevices, PowerLimitW: simLimitW})
		if err != nil {
			return nil, err
		}
		src = s
	}
	return src.Snapshot()
}
