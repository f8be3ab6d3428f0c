package nvml

import (
	"errors"
	"time"
)

// ErrUnavailable is returned (wrapped in a sentence that says why) when NVML cannot be
// used on this machine or in this build.
var ErrUnavailable = errors.New("NVML is unavailable")

// InitTimeout bounds NVML's Init: a driver that does not answer within it is reported
// as unavailable rather than hanging the campaign.
var InitTimeout = 10 * time.Second

// Device is one GPU as NVML reports it. Power values are milliwatts, as NVML gives
// them; a field NVML does not support on a device is left zero and named in
// Unsupported.
type Device struct {
	Index                int
	UUID                 string
	Name                 string
	PowerLimitMW         uint32 // power management limit
	EnforcedPowerLimitMW uint32 // the limit the board enforces (min of all limiters)
	PowerUsageMW         uint32
	TemperatureC         uint32
	SMClockMHz           uint32
	MemClockMHz          uint32
	ThrottleReasons      uint64 // clock event (throttle) reason bits
	MemoryTotal          uint64 // bytes
	MemoryUsed           uint64
	MemoryFree           uint64
	Unsupported          []string
}

// Snapshot is every device of the machine at one moment.
type Snapshot struct {
	DriverVersion string
	Devices       []Device
}
