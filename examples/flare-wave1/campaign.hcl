# Flare diagnostics wave 1 (seed 001), written as a rigor campaign and runnable on the
# built-in simulator. Each numbered comment names the seed's point it expresses.
#
#   go run ./cmd/rigor plan show  examples/flare-wave1
#   go run ./cmd/rigor plan apply examples/flare-wave1 --state examples/flare-wave1/runs/w1
#
# On the simulator every modelled delay is multiplied by time_scale (0.02: the seed's
# timings run 50x faster), and block_seconds stands in for the seed's 120 s blocks at
# that scale; both are variables, stated in every result.

campaign "flare-wave1" {
  description = "Identify scheduler, graph/rank, kernel and delivery costs under the same two 300 W GPUs. No promotion."
  # Files hashed when the plan is frozen. The request corpus is not a file: every
  # block records the sha256 of the corpus it sends (result.json, "corpus") and reports
  # it to the engine under "corpus <workload> s<seed> <cell> <lane>", so every arm of
  # a cell is held to the same prompts.
  frozen = ["fixtures/oracle.txt", "fixtures/discovery.json"]

  # 4. 90-minute maximum model outage with 20 minutes reserved for restoration.
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

variable "port" {
  type    = number
  default = 18090
}

variable "time_scale" {
  type        = number
  default     = 0.02
  description = "Simulator time scale (1 = the seed's real timings)."
}

variable "block_seconds" {
  type        = number
  default     = 2.4
  description = "Target block duration for the pilot-derived counts: the seed's 120 s at time_scale 0.02."
}

variable "trace_window" {
  type        = string
  default     = "100ms"
  description = "Scheduler and Nsight capture window: 1s on real hosts (seed 001); at time_scale 0.02, 100 ms of wall clock covers 5 s of modelled serving."
}

variable "api_key" {
  type      = string
  default   = ""
  sensitive = true
}

# Two 300 W GPUs; power is observed, never set.
host "node" {
  runtime               = "sim"
  gpus                  = "sim"
  sim_gpus              = 2
  sim_power_limit_watts = 300
}

# Every target serves vLLM's metric names (engine = "vllm", the default) and declares
# vLLM's prefix-cache reset call, which a real vLLM serves with VLLM_SERVER_DEV_MODE=1;
# the primary arms reset before their first block so none inherits another's cache.
target "incumbent" {
  host            = host.node
  container       = "wave1-incumbent"
  profile         = "incumbent"
  endpoint        = "http://127.0.0.1:${var.port}"
  time_scale      = var.time_scale
  api_key         = var.api_key
  protected_files = ["fixtures/discovery.json"]
  cache_reset     = "/reset_prefix_cache"
}

target "flare_control" {
  host        = host.node
  container   = "wave1-flare-control"
  profile     = "flare"
  endpoint    = "http://127.0.0.1:${var.port}"
  time_scale  = var.time_scale
  api_key     = var.api_key
  cache_reset = "/reset_prefix_cache"
}

# The instrumented build: on real hosts its image would come from a build step
# (image = step.build.NAME.image_id, as examples/docker-local does); here, on the
# simulator, it is the flare profile with its scheduler-trace endpoint.
target "flare_instrumented" {
  host        = host.node
  container   = "wave1-flare-instrumented"
  profile     = "flare"
  endpoint    = "http://127.0.0.1:${var.port}"
  time_scale  = var.time_scale
  api_key     = var.api_key
  cache_reset = "/reset_prefix_cache"
}

# 3. Capacity workload: nominal context 10240 (not a measured token count), max
# output 2048, temperature 1, top_p 0.95, reasoning max, API seed 42, unique prefixes
# (distinct per request within a block). corpus_seed binds prompt content; it is never
# sent as an API seed. The primary matrix gives each cell its own seed.
workload "capacity" {
  corpus           = "synthetic-summary"
  corpus_seed      = 4342
  nominal_context  = 10240
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  seed             = 42
  reasoning_effort = "max"
  prefixes         = "unique"
}

# 6-7. The diagnostic blocks' own corpus: the capacity settings, another seed, so no
# capture ever runs during a clean block or shares its prompts.
workload "diagnostic" {
  corpus           = "synthetic-summary"
  corpus_seed      = 5342
  nominal_context  = 10240
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  seed             = 42
  reasoning_effort = "max"
  prefixes         = "unique"
}

# 5. Extended lanes: nominal context 32768, repeated prefixes (shared by the requests
# of a block) versus unique cold prefixes ("cold means fresh prefix": new prompts every
# repetition). Cached-token counters establish the reuse each block saw.
workload "extended_repeated" {
  corpus           = "synthetic-repeated-code"
  corpus_seed      = 4642
  nominal_context  = 32768
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  reasoning_effort = "max"
  prefixes         = "repeated"
}

workload "extended_cold" {
  corpus           = "synthetic-repeated-code"
  corpus_seed      = 4642
  nominal_context  = 32768
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  reasoning_effort = "max"
  prefixes         = "unique"
  fresh_prefixes   = true
}

# Gates before every block (amendment after the first C4 failure): exact container
# incarnation, zero work queued or running, a healthy endpoint, both GPUs at 300 W.
gate "before_block" {
  health            = true
  idle              = true
  identity          = true
  gpu_count         = 2
  power_limit_watts = 300
}

# 1. Offline fixture/oracle checks before anything touches the target.
step "exec" "oracle" {
  command       = ["sh", "-c", "grep -c PASS fixtures/oracle.txt && ! grep -q FAIL fixtures/oracle.txt"]
  inputs        = ["fixtures/oracle.txt"]
  failure_class = "gate"
  timeout       = "1m"
}

# Prove the client before trusting it.
step "calibrate" "client" {
  concurrency    = 4
  tokens         = 32
  requests       = 40
  max_ttft_error = "25ms"
  timeout        = "2m"
}

# 1. The incumbent: already running on a real host (identity only); started here.
step "deploy" "incumbent" {
  target  = target.incumbent
  phase   = "setup"
  timeout = "2m"
}

step "identity" "incumbent" {
  target  = target.incumbent
  timeout = "1m"
}

# 3. Pilot at C1 and C4, 16 requests, on a corpus of its own (the pilot lane): cold,
# and disjoint from every measured block's prompts.
step "block" "pilot" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = each.value
  requests    = 16
  gates       = [gate.before_block]
  phase       = "pilot"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.identity.incumbent, step.calibrate.client]
}

# 3. Counts targeting block_seconds, rounded up to a multiple of the concurrency,
# at most 256, frozen before any Flare traffic. On the simulator they come out within
# 10 % of the seed's C1 = 52 and C4 = 160 at the time scales tested
# (cmd/rigor/testdata/script/wave1_pilot.txtar runs this pilot at 0.4 and 0.2).
step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(256, ceil_multiple(b.requests * var.block_seconds / b.elapsed_s, b.concurrency))
  }
}

step "deploy" "flare_control" {
  target  = target.flare_control
  outage  = "begin"
  timeout = "5m"
}

step "deploy" "flare_instrumented" {
  target  = target.flare_instrumented
  timeout = "5m"
}

# 6. Live instrumentation qualification, separate from clean throughput: after the
# instrumented arm's clean blocks, diagnostic blocks on their own corpus (half a
# frozen count each) carry the captures, and each capture names the block it runs
# during, so "under load" is a relation the engine checks (overlap.json), never a
# coincidence of timing. First one bounded capture under warmed load: a C4 block sends
# the corpus, the next is served from it and the capture runs during it; both ranks
# must be present.
step "block" "diag_warmup" {
  target      = target.flare_instrumented
  workload    = workload.diagnostic
  concurrency = 4
  requests    = ceil_multiple(step.freeze.counts.values["c4"] / 2, 4)
  reset_cache = true
  gates       = [gate.before_block]
  phase       = "diagnostic"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.block.primary["flare_instrumented/c4/r3"]]
}

step "block" "diag_warmed" {
  target      = target.flare_instrumented
  workload    = workload.diagnostic
  concurrency = 4
  requests    = ceil_multiple(step.freeze.counts.values["c4"] / 2, 4)
  primed      = true
  gates       = [gate.before_block]
  phase       = "diagnostic"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.block.diag_warmup]
}

step "trace" "under_load" {
  target               = target.flare_instrumented
  duration             = var.trace_window
  ranks                = [0, 1]
  uses                 = ["trace"]
  timeout              = "1m"
  phase                = "diagnostic"
  during               = step.block.diag_warmed
  start_after_requests = 4
  on_failure           = "continue"
}

# Then three short captures per C1/C4, each under its own block (from an empty cache),
# in order: count repeats each concurrency (keys c1/1 .. c4/3, each.value the
# concurrency) and sequential chains them.
step "block" "diag" {
  for_each    = { c1 = 1, c4 = 4 }
  count       = 3
  sequential  = true
  target      = target.flare_instrumented
  workload    = workload.diagnostic
  concurrency = each.value
  requests    = ceil_multiple(step.freeze.counts.values["c${each.value}"] / 2, each.value)
  reset_cache = true
  gates       = [gate.before_block]
  phase       = "diagnostic"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.block.diag_warmed]
}

step "trace" "short" {
  for_each             = { c1 = 1, c4 = 4 }
  count                = 3
  sequential           = true
  target               = target.flare_instrumented
  duration             = var.trace_window
  ranks                = [0, 1]
  uses                 = ["trace"]
  timeout              = "1m"
  phase                = "diagnostic"
  during               = step.block.diag[each.key]
  start_after_requests = each.value
  on_failure           = "continue"
}

# 7. Nsight Systems over a C4 diagnostic block, with its unprofiled control (same
# target, corpus and concurrency, adjacent in time) named for the report's
# observer-overhead comparison. On the simulator the capture is the server's own
# (where = "simulator", labelled simulated); on a real host set where = "container"
# (or "host") and the command nsys profiles. A failed capture is recorded without
# stopping the wave.
step "block" "nsys_control" {
  target      = target.flare_instrumented
  workload    = workload.diagnostic
  concurrency = 4
  requests    = ceil_multiple(step.freeze.counts.values["c4"] / 2, 4)
  reset_cache = true
  gates       = [gate.before_block]
  phase       = "diagnostic"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.block.diag]
}

step "block" "nsys_profiled" {
  target      = target.flare_instrumented
  workload    = workload.diagnostic
  concurrency = 4
  requests    = ceil_multiple(step.freeze.counts.values["c4"] / 2, 4)
  reset_cache = true
  gates       = [gate.before_block]
  phase       = "diagnostic"
  timeout     = "600s"
  uses        = ["gpu"]
  depends_on  = [step.block.nsys_control]
}

step "nsys" "timeline" {
  target               = target.flare_instrumented
  duration             = var.trace_window
  timeout              = "2m"
  phase                = "diagnostic"
  uses                 = ["nsys"]
  during               = step.block.nsys_profiled
  start_after_requests = 4
  control              = step.block.nsys_control
  modules = {
    moe       = ["W4A16FusedMoe"]
    attention = ["^flash_"]
    gemm      = ["gemm"]
    nccl      = ["^nccl"]
  }
  rank_devices = [0, 1]
  on_failure   = "continue"
}

step "deploy" "incumbent_after" {
  target     = target.incumbent
  timeout    = "5m"
  depends_on = [step.block.nsys_profiled, step.nsys.timeline]
}

# 5. The extended lanes run on the instrumented build after the primary matrix, and
# only if its instrumented arm settled clean (seed 001: "Extended context/cache sweeps
# will not be expanded from this failed primary arm"); otherwise this deploy and both
# extended matrices are skipped, with the condition as the reason.
step "deploy" "flare_extended" {
  target     = target.flare_instrumented
  timeout    = "5m"
  depends_on = [step.block.primary]
  condition  = outcome.arm.primary.flare_instrumented.clean
}

# 4. Primary clean matrix in ABBA order, C1/C4, a 600 s hard bound per block. Each arm
# first primes the entire per-concurrency corpus once (seeds 4342/4642), then runs
# three repetitions on the same corpus with deterministic request IDs per repetition;
# every arm resets its target's prefix cache before the first block of each cell. On
# the simulator, with the counts this pilot freezes at the default block_seconds, the
# C1 repetitions find their corpus cached; the C4 corpus (about 160 prompts of 7.7K
# tokens) outgrows the 998,210-token prefix cache, so its repetitions find it evicted
# and result.json records the contradiction (seed 001: "a primed corpus is not
# necessarily resident"). With smaller counts (a smaller block_seconds) it fits.
matrix "primary" {
  workload    = workload.capacity
  corpus_seed = { c1 = 4342, c4 = 4642 }
  concurrency = [1, 4]
  repetitions = 3
  priming     = true
  requests    = step.freeze.counts.values
  timeout     = "600s"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "incumbent_before" {
    target      = target.incumbent
    setup       = [step.freeze.counts]
    reset_cache = true
  }
  arm "flare_control" {
    target      = target.flare_control
    setup       = [step.deploy.flare_control]
    reset_cache = true
  }
  arm "flare_instrumented" {
    target      = target.flare_instrumented
    setup       = [step.deploy.flare_instrumented]
    reset_cache = true
  }
  arm "incumbent_after" {
    target      = target.incumbent
    setup       = [step.deploy.incumbent_after]
    reset_cache = true
  }
}

# 5. Extended lanes, 8 requests, three repetitions, only if the outage budget allows
# (the engine defers them otherwise) and the primary matrix did not stop the wave. The
# repeated lane shares prefixes within its first repetition and finds them primed in
# the next two; the cold lane sends fresh prompts every repetition.
matrix "extended" {
  workload    = workload.extended_repeated
  concurrency = [1, 4]
  repetitions = 3
  requests    = 8
  timeout     = "600s"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "flare_instrumented" {
    target = target.flare_instrumented
    setup  = [step.deploy.flare_extended]
  }
}

matrix "extended_cold" {
  workload    = workload.extended_cold
  concurrency = [1, 4]
  repetitions = 3
  requests    = 8
  timeout     = "600s"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "flare_instrumented" {
    target = target.flare_instrumented
    setup  = [step.deploy.flare_extended]
  }
}

# 8. Pre-registered decision rule: >= 5% primary gain, <= 3% protected regression,
# three matched repetitions, compared in the primary matrix. The wave authorises no
# promotion (promotion = false): the comparisons are reported, nothing is promoted.
# As the seed wrote it, the rule compares point estimates (criterion "point"); after
# the pilot, `rigor plan show --state` states what three repetitions can resolve.
decision "promotion" {
  matrix                   = step.block.primary
  promotion                = false # seed 001: "no promotion is authorised"
  primary_metric           = "aggregate_output_tok_s"
  primary_cells            = ["c4"]
  baseline_arm             = "incumbent_before"
  candidate_arm            = "flare_control"
  protected_cells          = ["c1"]
  min_gain                 = 0.05
  max_protected_regression = 0.03
  matched_repetitions      = 3
  criterion                = "point"
}

# 9. Restore the exact incumbent; verify health, preflight and the protected
# discovery files.
step "restore" "incumbent" {
  target          = target.incumbent
  always          = true
  outage          = "end"
  timeout         = "10m"
  protected_files = ["fixtures/discovery.json"]
  preflight       = [["sh", "-c", "test -n \"$RIGOR_ENDPOINT\""]]
}
