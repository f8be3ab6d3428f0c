// Package nvml is the only package of rigor that imports NVIDIA's go-nvml. It reads
// what a campaign needs to know about the GPUs of the machine rigor runs on: count,
// UUID, name, driver version, the power management limit and the enforced power
// limit, power draw, temperature, SM and memory clocks, clock-throttle (event)
// reasons, and memory used and free.
//
// Invariants:
//   - It observes and never sets: no function here changes a limit, a clock or a mode.
//   - Without an NVIDIA driver, NVML's Init returns ERROR_LIBRARY_NOT_FOUND; Read
//     then returns ErrUnavailable wrapped in one sentence that names gpus = "sim" as the
//     alternative. Init is bounded by InitTimeout, so a wedged driver cannot hang a
//     campaign.
//   - A build with CGO_ENABLED=0 compiles without go-nvml (nvml_nocgo.go) and reports
//     the same ErrUnavailable, so the static simulator binary needs no C toolchain.
//
// Building with cgo compiles go-nvml's nvml.h, which marks many functions deprecated;
// silence gcc with CGO_CFLAGS="-O2 -g -Wno-deprecated-declarations" (the Makefile does).
//
// Out of scope: MIG instances, NVLink, ECC counters, process lists, events.
package nvml
