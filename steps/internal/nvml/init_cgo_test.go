//go:build cgo

package nvml

import (
	"errors"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
)

// TestInitWithin drives the bounded Init with drivers that answer in each way: a
// wedged one is given up on at the bound with the sentence that says so, a broken
// one is named by its NVML return code, and every failure names gpus = "sim".
func TestInitWithin(t *testing.T) {
	wedged := make(chan struct{})
	defer close(wedged)
	cases := []struct {
		name string
		init func() gonvml.Return
		want string
	}{
		{"wedged", func() gonvml.Return { <-wedged; return gonvml.SUCCESS },
			`NVML is unavailable: NVML did not initialise within 200ms (the NVIDIA driver is not answering), so fix the driver on this machine or set gpus = "sim" on the host to use simulated GPUs instead`},
		{"driver not loaded", func() gonvml.Return { return gonvml.ERROR_DRIVER_NOT_LOADED },
			`NVML is unavailable: NVML could not initialise (ERROR_DRIVER_NOT_LOADED), so fix the NVIDIA driver on this machine or set gpus = "sim" on the host to use simulated GPUs instead`},
		{"no library", func() gonvml.Return { return gonvml.ERROR_LIBRARY_NOT_FOUND },
			`NVML is unavailable: no NVIDIA driver library (libnvidia-ml.so.1) is installed on this machine (ERROR_LIBRARY_NOT_FOUND), so set gpus = "sim" on the host to use simulated GPUs instead`},
	}
	for _, tc := range cases {
		start := time.Now()
		err := initWithin(tc.init, 200*time.Millisecond)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%s: initWithin took %s, bound 200ms", tc.name, took)
		}
		if err == nil || !errors.Is(err, ErrUnavailable) || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
	if err := initWithin(func() gonvml.Return { return gonvml.SUCCESS }, time.Second); err != nil {
		t.Errorf("a driver that initialises: %v", err)
	}
}
