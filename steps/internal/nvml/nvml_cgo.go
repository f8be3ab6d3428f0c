//go:build cgo

package nvml

import (
	"errors"
	"fmt"
	"sync"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

var (
	initMu  sync.Mutex
	initOK  bool
	initErr error
)

// initOnce initialises NVML once per process, bounded by InitTimeout. A failure is
// remembered: a machine without a driver does not grow one during a campaign, and a
// wedged Init must not be retried into a second stuck thread.
func initOnce() error {
	initMu.Lock()
	defer initMu.Unlock()
	if initOK || initErr != nil {
		return initErr
	}
	initErr = initWithin(gonvml.Init, InitTimeout)
	initOK = initErr == nil
	return initErr
}

// initWithin runs init, giving up after timeout: a wedged driver leaves one stuck
// thread behind, never a stuck campaign.
func initWithin(init func() gonvml.Return, timeout time.Duration) error {
	done := make(chan gonvml.Return, 1)
	go func() { done <- init() }()
	select {
	case ret := <-done:
		switch ret {
		case gonvml.SUCCESS:
			return nil
		case gonvml.ERROR_LIBRARY_NOT_FOUND:
			return fmt.Errorf("%w: no NVIDIA driver library (libnvidia-ml.so.1) is installed on this machine (ERROR_LIBRARY_NOT_FOUND), so set gpus = \"sim\" on the host to use simulated GPUs instead", ErrUnavailable)
		default:
			return fmt.Errorf("%w: NVML could not initialise (%s), so fix the NVIDIA driver on this machine or set gpus = \"sim\" on the host to use simulated GPUs instead", ErrUnavailable, ret.String())
		}
	case <-time.After(timeout):
		return fmt.Errorf("%w: NVML did not initialise within %s (the NVIDIA driver is not answering), so fix the driver on this machine or set gpus = \"sim\" on the host to use simulated GPUs instead", ErrUnavailable, timeout)
	}
}

// Read returns every device's identity and telemetry.
func Read() (Snapshot, error) {
	if err := initOnce(); err != nil {
		return Snapshot{}, err
	}
	var s Snapshot
	drv, ret := gonvml.SystemGetDriverVersion()
	if ret != gonvml.SUCCESS {
		return s, fmt.Errorf("nvml: driver version: %w", retErr(ret))
	}
	s.DriverVersion = drv
	n, ret := gonvml.DeviceGetCount()
	if ret != gonvml.SUCCESS {
		return s, fmt.Errorf("nvml: device count: %w", retErr(ret))
	}
	for i := 0; i < n; i++ {
		d, err := readDevice(i)
		if err != nil {
			return s, err
		}
		s.Devices = append(s.Devices, d)
	}
	return s, nil
}

func readDevice(i int) (Device, error) {
	d := Device{Index: i}
	h, ret := gonvml.DeviceGetHandleByIndex(i)
	if ret != gonvml.SUCCESS {
		return d, fmt.Errorf("nvml: device %d: handle: %w", i, retErr(ret))
	}
	// Identity and the limits are required: without them no gate can be checked.
	if d.UUID, ret = h.GetUUID(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("nvml: device %d: UUID: %w", i, retErr(ret))
	}
	if d.Name, ret = h.GetName(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("nvml: device %d: name: %w", i, retErr(ret))
	}
	if d.PowerLimitMW, ret = h.GetPowerManagementLimit(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("nvml: device %d (%s): power management limit: %w", i, d.UUID, retErr(ret))
	}
	if d.EnforcedPowerLimitMW, ret = h.GetEnforcedPowerLimit(); ret != gonvml.SUCCESS {
		return d, fmt.Errorf("nvml: device %d (%s): enforced power limit: %w", i, d.UUID, retErr(ret))
	}
	// Telemetry a board may not support is recorded as unsupported, not fatal.
	opt := func(name string, r gonvml.Return) {
		if r != gonvml.SUCCESS {
			d.Unsupported = append(d.Unsupported, name+": "+r.String())
		}
	}
	d.PowerUsageMW, ret = h.GetPowerUsage()
	opt("power_usage", ret)
	d.TemperatureC, ret = h.GetTemperature(gonvml.TEMPERATURE_GPU)
	opt("temperature", ret)
	d.SMClockMHz, ret = h.GetClockInfo(gonvml.CLOCK_SM)
	opt("sm_clock", ret)
	d.MemClockMHz, ret = h.GetClockInfo(gonvml.CLOCK_MEM)
	opt("mem_clock", ret)
	d.ThrottleReasons, ret = h.GetCurrentClocksEventReasons()
	if ret == gonvml.ERROR_NOT_SUPPORTED || ret == gonvml.ERROR_FUNCTION_NOT_FOUND {
		d.ThrottleReasons, ret = h.GetCurrentClocksThrottleReasons()
	}
	opt("throttle_reasons", ret)
	mem, ret := h.GetMemoryInfo()
	opt("memory", ret)
	d.MemoryTotal, d.MemoryUsed, d.MemoryFree = mem.Total, mem.Used, mem.Free
	return d, nil
}

func retErr(r gonvml.Return) error {
	return errors.New(r.Error())
}
