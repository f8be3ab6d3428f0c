// Package nsys is the nsys step type: one Nsight Systems capture bounded by a
// duration, on the host or inside the target's container through `docker exec`,
// exported to SQLite with `nsys export --type sqlite`.
//
// where chooses what runs: "container" (the default for a docker target), "host"
// (the default without a target), or "simulator" (the default for a target with
// runtime = "sim"). No CUDA runs on the simulator, so there the step asks the server
// for its own capture (simulate.go, steps/internal/sim/kernels.go): the kernels of
// the frames it ran for the requests it served during the window, seeded, written
// as an export with nsys's own tables (nsysdb) and labelled as simulated in
// capture.json ("simulated": true, "source"), in the export's version and in its one
// warning. It keeps the simulator's answer as sim-profile.json; command, args, nsys,
// docker, container and env would shape a launch that does not happen and are
// refused (class "config"). where = "host" on a simulator target still runs nsys.
// nsys profiles whole seconds (a duration of at least 1s); the simulator takes any
// duration up to its trace limit (60 s), so at a small time scale a short window
// stands for seconds of serving.
//
// Evidence kept in the attempt directory: the raw report (<output>.nsys-rep, or
// .qdrep from old versions), the SQLite export (<output>.sqlite), capture.json (the
// argv of both commands, where they ran, the requested duration and the capture
// interval as UTC anchors plus a monotonic span), warnings.txt (every output line of
// nsys that contains "Warning" or "WARNING", in order, prefixed by the stream it came
// from) and the full stdout/stderr of each command.
//
// Seed 000 asks for the rank/graph/module mapping and the unmapped fraction too; they
// come from the SQLite file and belong to the report, not to the capture. The step
// declares what the report needs and checks it when the plan is loaded (config.go):
// modules (module name -> RE2 patterns on kernel names), rank_devices (the CUDA
// device of each rank) and control (a reference to the unprofiled control block,
// whose address capture.json records). analyze.go reads the export: kernel time by
// module, rank/device and graph (innermost NVTX range on the launching thread, or
// the CUDA graph), the unmapped fraction, the capture interval and the export's
// warnings; every sum of kernel times overlaps and is labelled so.
//
// nsys and the docker CLI get PATH, HOME, LANG, TMPDIR, DOCKER_HOST (the target's
// host) and the step's env, nothing else of rigor's environment; inside a container
// the env entries are passed by name (docker exec -e KEY), so no value is on a
// command line. Kept output is redacted of the step's secrets.
//
// Classes: nsys (or docker, in a container) missing is "tool_missing" with a message
// that says what to install or set; a command that fails or leaves no report is
// "exec". On the simulator: a container not running before the capture is
// "identity", a changed incarnation or a container stopped after it "restart", a failed or malformed answer
// "instrumentation_incomplete". The step never retries.
package nsys
