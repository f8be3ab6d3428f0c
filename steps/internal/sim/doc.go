// Package sim is rigor's simulated serving stack: an OpenAI-compatible streaming LLM
// server with a batch-aware timing model, a real prefix cache, Prometheus metrics under
// vLLM's or SGLang's names (Config.Engine) with that engine's prefix-cache reset
// endpoint (POST /reset_prefix_cache or /flush_cache), fault injection, and a small
// container runtime (the runtime = "sim"
// counterpart of Docker) that starts, stops, restarts and OOM-kills such servers.
//
// The runtime (runtime.go, runtime_proc.go, child.go) runs each container as a server
// process of its own: the running binary started again with only ChildEnv in its
// environment, in a new session, so a SIGKILL of the rigor process or a Ctrl-C in its
// terminal does not reach it and it survives a crashed apply as a container would.
// A host is a directory (container.json per container, written under a lock file by
// rigor processes; server.json and exit-<pid>.json written by the server and by
// whoever saw it exit; server.log). Any process that opens the directory sees and
// manages the same containers. The server's own Server and Listen stay usable
// in-process (bench, calibrate, tests).
//
// It exists so that a campaign (and every test of the engine) can run end to end on any
// machine, and so that the seed campaign's numbers come out of a model rather than out of
// canned responses: TTFT grows with uncached prompt tokens and with queueing behind other
// prefills, TPOT grows with the running batch, cached_tokens is what the cache really
// reused, and a failure is visible on the wire exactly as a real server would show it.
//
// Invariants:
//   - A token is what package tokens says it is (a whitespace-separated word), for
//     prompts, for the prefix cache's blocks and for generated text: tokens.Count over the
//     streamed reasoning plus content equals usage.completion_tokens.
//   - Everything random (output length, reasoning share, generated words, timing jitter,
//     fault decisions) comes from a per-request RNG derived from Config.Seed and the
//     X-Request-Id header (or the prompt when there is none), so a rerun with the same
//     request IDs streams the same words and hits the same faults. Only the timing depends
//     on when requests really arrive.
//   - Each chunk is sent at or after its modelled due time, and due times are computed
//     from the previous due time, never from when the previous write happened, so timer
//     lateness does not accumulate. When the server falls behind (tiny TimeScale, heavy
//     load), chunks that are already due are written together and flushed once.
//   - Profiles "incumbent" and "flare" reproduce, for ~7.7K-token cold prompts, seed
//     002's C1 TTFT, C1 TPOT and C4 TPOT medians within 10%, and the incumbent gives seed
//     001's pilot counts (C1 = 52, C4 = 160) within 10%; their C4 TTFT is about a third of
//     seed 002's, which those counts rule out (profile.go). Predict computes the same
//     model in virtual time, without sleeping, and the tests hold it to that.
//   - Server.Close and Running.Close return only after every handler has returned,
//     including hung ones.
//   - Every response carries IncarnationHeader: the runtime's incarnation of the
//     container (ID@StartedAt/pid-PID), or one drawn when an in-process server starts.
//   - A container is running only while its recorded pid is alive, not a zombie, and
//     started at the recorded time (/proc/<pid>/stat; a recycled pid is another
//     process). A dead one is exited, with the exit code whoever saw it end recorded
//     (0 after a stop, 128+signal after a kill, 137 for the OOM fault), or
//     ExitUnknown. Inspect and List wait for an operation in progress, so a restart
//     is never seen halfway.
//
// Out of scope: real tokenisation and sampling (temperature, top_p and seed are accepted
// and validated, and seed only selects the RNG stream), preemption (KV space for prompt
// plus max_tokens is reserved at admission, so vllm:num_preemptions_total stays 0),
// caching of generated tokens, tool calls, n > 1, logprobs, HTTP/2-specific behaviour and GPU
// telemetry (steps/internal/gpu simulates GPUs). The scheduler-trace endpoint lives in trace.go,
// the simulated Nsight capture (/debug/nsys-profile: an nsys SQLite export of the frames
// the server ran, labelled as simulated) in kernels.go, the run-time fault injection
// endpoint (/debug/faults) in admin.go.
package sim
