package nvml

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// On a machine without the NVIDIA driver (CI, laptops), Read must fail fast with the
// one sentence that names gpus = "sim"; on a GPU machine it must read real devices.
func TestReadWithoutDriverIsOneSentence(t *testing.T) {
	start := time.Now()
	s, err := Read()
	took := time.Since(start)
	if took > InitTimeout+2*time.Second {
		t.Fatalf("Read took %s: it must be bounded by InitTimeout (%s)", took, InitTimeout)
	}
	if err == nil {
		if driverPresent() {
			if s.DriverVersion == "" || len(s.Devices) == 0 {
				t.Fatalf("NVML answered without a driver version or devices: %+v", s)
			}
			for _, d := range s.Devices {
				if !strings.HasPrefix(d.UUID, "GPU-") || d.PowerLimitMW == 0 || d.EnforcedPowerLimitMW == 0 {
					t.Errorf("device %d: implausible identity or limits: %+v", d.Index, d)
				}
			}
			return
		}
		t.Fatalf("Read succeeded on a machine without libnvidia-ml: %+v", s)
	}
	if driverPresent() {
		t.Skipf("the NVIDIA driver library is present but NVML failed: %v", err)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("error does not wrap ErrUnavailable: %v", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, `gpus = "sim"`) {
		t.Errorf("error does not name gpus = \"sim\" as the alternative: %q", msg)
	}
	if strings.Count(strings.TrimSuffix(msg, "."), ". ") != 0 || strings.Contains(msg, "\n") {
		t.Errorf("error is not one sentence: %q", msg)
	}
	const want = `NVML is unavailable: no NVIDIA driver library (libnvidia-ml.so.1) is installed on this machine (ERROR_LIBRARY_NOT_FOUND), so set gpus = "sim" on the host to use simulated GPUs instead`
	if cgoEnabled && msg != want {
		t.Errorf("error is\n%q\nwant\n%q", msg, want)
	}
	// A second call answers from the remembered failure, at once.
	start = time.Now()
	if _, err2 := Read(); err2 == nil || err2.Error() != msg || time.Since(start) > time.Second {
		t.Errorf("second Read: %v after %s, want the same error at once", err2, time.Since(start))
	}
}

func driverPresent() bool {
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib", "/usr/local/nvidia/lib64", "/usr/lib/aarch64-linux-gnu"} {
		if _, err := os.Stat(dir + "/libnvidia-ml.so.1"); err == nil {
			return true
		}
	}
	return false
}
