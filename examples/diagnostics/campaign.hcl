# Diagnostics under load on the simulator (seed 001 paragraphs 6-7, seed 000's rules):
# a 1 s scheduler-trace capture during a warmed C4 block, three short chained captures
# per concurrency each under its own block, an Nsight capture over a block with its
# named unprofiled control, and the fixed-output fixture with trace-on and trace-off
# cells kept apart. `rigor report` then has the diagnostics section. No Docker, no GPU:
# the Nsight capture is the simulator's own and is labelled as simulated.
#
#   cmd/rigor/bin/rigor plan apply examples/diagnostics/campaign.hcl --state examples/diagnostics/runs/d1
#   cmd/rigor/bin/rigor report --state examples/diagnostics/runs/d1

campaign "diagnostics" {
  description = "Captures under load on the simulator: trace during a warmed C4 block, chained short captures at C1 and C4, Nsight with its control, the fixed-output fixture."
}

variable "port" {
  type        = number
  default     = 19100
  description = "Port the flare target serves on."
}

variable "time_scale" {
  type        = number
  default     = 0.05
  description = "Simulator time scale: 0.05 runs the seed's timings 20x faster. Stated in every result."
}

host "sim" {
  runtime  = "sim"
  gpus     = "sim"
  sim_gpus = 2
}

target "flare" {
  host        = host.sim
  container   = "diagnostics-flare"
  profile     = "flare"
  endpoint    = "http://127.0.0.1:${var.port}"
  time_scale  = var.time_scale
  cache_reset = "/reset_prefix_cache"
}

# Every request decodes at least 128 tokens, so a block of a few dozen requests keeps
# the batch full for the seconds a capture and its overhead take.
workload "load" {
  corpus          = "synthetic-summary"
  corpus_seed     = 7
  nominal_context = 2048
  max_tokens      = 2048
  min_tokens      = 128
}

# The short blocks' own corpus: a corpus is pinned per workload and concurrency, and
# these blocks send fewer requests than the C4 blocks above.
workload "short" {
  corpus          = "synthetic-summary"
  corpus_seed     = 8
  nominal_context = 2048
  max_tokens      = 2048
  min_tokens      = 128
}

# Seed 000's fixed-output fixture: exactly 1024 completion tokens (min_tokens =
# max_tokens with ignore_eos), and every request's prompt and completion token counts
# asserted; a request that differs is outcome assertion_failed. Nominal context 512
# renders 384 prompt tokens, plus the chat template's three markers.
workload "fixed" {
  corpus                   = "synthetic-summary"
  corpus_seed              = 11
  nominal_context          = 512
  max_tokens               = 1024
  min_tokens               = 1024
  ignore_eos               = true
  assert_prompt_tokens     = 387
  assert_completion_tokens = 1024
}

step "deploy" "flare" {
  target  = target.flare
  timeout = "1m"
}

# 1. A 1 s trace during a warmed C4 block: a block from an empty cache sends the
# corpus first, so the captured block serves it from a warm prefix cache. The first
# block is unprofiled, so it is also one of the blocks the Nsight comparison takes
# its noise from (3.).
step "block" "warm" {
  target      = target.flare
  workload    = workload.load
  concurrency = 4
  requests    = 160
  reset_cache = true
  phase       = "diagnostic"
  uses        = ["gpu"]
  depends_on  = [step.deploy.flare]
}

step "block" "warmed_c4" {
  target      = target.flare
  workload    = workload.load
  concurrency = 4
  requests    = 160
  primed      = true
  phase       = "diagnostic"
  uses        = ["gpu"]
  depends_on  = [step.block.warm]
}

step "trace" "under_load" {
  target               = target.flare
  duration             = "1s"
  ranks                = [0, 1]
  uses                 = ["trace"]
  phase                = "diagnostic"
  during               = step.block.warmed_c4
  start_after_requests = 8
}

# 2. Three short captures per concurrency, each under its own block: count repeats
# each concurrency three times (keys c1/1 .. c4/3) and sequential runs them in that
# order, each after the one before it.
step "block" "short" {
  for_each    = { c1 = 1, c4 = 4 }
  count       = 3
  sequential  = true
  target      = target.flare
  workload    = workload.short
  concurrency = each.value
  requests    = max(24, 12 * each.value)
  reset_cache = true
  phase       = "diagnostic"
  uses        = ["gpu"]
  depends_on  = [step.trace.under_load]
}

step "trace" "short" {
  for_each             = { c1 = 1, c4 = 4 }
  count                = 3
  sequential           = true
  target               = target.flare
  duration             = "200ms"
  ranks                = [0, 1]
  uses                 = ["trace"]
  phase                = "diagnostic"
  during               = step.block.short[each.key]
  start_after_requests = 2 * each.value
}

# 3. Nsight over a block, with its named unprofiled control: the same target, corpus
# and concurrency, adjacent in time; block.warm, unprofiled too, adds the noise.
step "block" "nsys_control" {
  target      = target.flare
  workload    = workload.load
  concurrency = 4
  requests    = 160
  reset_cache = true
  phase       = "diagnostic"
  uses        = ["gpu"]
  depends_on  = [step.trace.short]
}

step "block" "nsys_profiled" {
  target      = target.flare
  workload    = workload.load
  concurrency = 4
  requests    = 160
  reset_cache = true
  phase       = "diagnostic"
  uses        = ["gpu"]
  depends_on  = [step.block.nsys_control]
}

# On the simulator (where = "simulator", the default for its targets) the capture is
# the server's own: the kernels of the frames it ran, written with nsys's tables.
step "nsys" "timeline" {
  target               = target.flare
  duration             = "1s"
  output               = "flare-c4"
  uses                 = ["nsys"]
  phase                = "diagnostic"
  during               = step.block.nsys_profiled
  start_after_requests = 8
  control              = step.block.nsys_control
  modules = {
    moe       = ["W4A16FusedMoe"]
    attention = ["^flash_"]
    gemm      = ["gemm"]
    nccl      = ["^nccl"]
  }
  rank_devices = [0, 1]
}

# 4. The fixed-output fixture in two cells of one matrix: the same corpus and target,
# traced in one arm and not in the other, so traced requests never mix with clean ones.
matrix "fixture" {
  workload    = workload.fixed
  concurrency = [1]
  repetitions = 1
  requests    = 6
  timeout     = "2m"
  uses        = ["gpu"]

  arm "trace_off" {
    target      = target.flare
    setup       = [step.nsys.timeline]
    reset_cache = true
  }
  arm "trace_on" {
    target      = target.flare
    reset_cache = true
  }
}

step "trace" "fixture" {
  target               = target.flare
  duration             = "200ms"
  ranks                = [0, 1]
  uses                 = ["trace"]
  phase                = "diagnostic"
  during               = step.block.fixture["trace_on/c1/r1"]
  start_after_requests = 1
}
