//go:build !cgo

package nvml

import "fmt"

// Read always fails in a build without cgo: go-nvml needs it.
func Read() (Snapshot, error) {
	return Snapshot{}, fmt.Errorf("%w: this rigor binary was built with CGO_ENABLED=0 and cannot load NVML, so build it with cgo on a machine with the NVIDIA driver or set gpus = \"sim\" on the host to use simulated GPUs instead", ErrUnavailable)
}
