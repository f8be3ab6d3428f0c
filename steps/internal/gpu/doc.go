// Package gpu observes the GPUs of a campaign host: a Source gives a snapshot of every
// device (identity, power limits, power, temperature, clocks, throttle reasons,
// memory); a Gate checks count, driver and power limit before a block; a Sampler
// records every device at a fixed interval into gpu.jsonl during a block and notices a
// power limit that changes.
//
// Three sources exist: NVML (package nvml, the machine rigor runs on); DCGM, a
// node's dcgm-exporter scraped over HTTP and parsed with expfmt (GPUs rigor cannot
// open itself: a Kubernetes node, a remote Docker Engine); and Sim, simulated
// devices with a configured limit, plausible telemetry, and injectable limit drift,
// which WriteDCGM can also serve in the exporter's format.
// Sim devices are process-global per host name, so drift injected
// for a host is seen by whichever block samples that host.
//
// Invariants: rigor observes power and never sets it; nothing here has a setter for a
// real device. A limit is "changed" when either the management limit or the enforced
// limit of any device differs from the first sample of the block by 0.5 W or more
// (NVML reports milliwatts). A device set that changes during a block, or a snapshot
// that fails, makes the telemetry incomplete: drift can then not be ruled out.
//
// Out of scope: setting limits or clocks, per-process accounting, MIG.
package gpu
