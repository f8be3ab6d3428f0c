# Quickstart: an incumbent and a candidate profile of the built-in simulator,
# compared the way seed 001 compares real stacks. No Docker, no GPU.
#
#   make quickstart     # builds cmd/rigor/bin/rigor, then, with a new state each time:
#   cmd/rigor/bin/rigor plan apply examples/quickstart/campaign.hcl --state examples/quickstart/runs/<date-time>

campaign "quickstart" {
  description = "Incumbent vs candidate on the simulator: pilot, frozen counts, ABBA at C1 and C4, restore."
  frozen      = ["fixtures/oracle.txt"]

  outage {
    budget  = "90m" # no step starts that could not end within it; an overrun is reported
    reserve = "20m" # always kept for restore
  }
}

variable "port" {
  type        = number
  default     = 18080
  description = "Port both targets serve on: they take turns on the same endpoint, as on one GPU node."
}

variable "time_scale" {
  type        = number
  default     = 0.02
  description = "Simulator time scale: 0.02 runs the seed's timings 50x faster. Stated in every result."
}

variable "block_seconds" {
  type        = number
  default     = 0.8
  description = "Target duration of a measured block, used to derive request counts from the pilot."
}

variable "api_key" {
  type      = string
  default   = ""
  sensitive = true
}

host "laptop" {
  runtime = "sim"
  gpus    = "sim"
}

# Both serve vLLM's metric names and its prefix-cache reset call (engine = "vllm" is
# the default), which the arms use to start from an empty cache.
target "incumbent" {
  host        = host.laptop
  container   = "quickstart-incumbent"
  profile     = "incumbent"
  endpoint    = "http://127.0.0.1:${var.port}"
  time_scale  = var.time_scale
  api_key     = var.api_key
  cache_reset = "/reset_prefix_cache"
}

target "candidate" {
  host        = host.laptop
  container   = "quickstart-candidate"
  profile     = "flare"
  endpoint    = "http://127.0.0.1:${var.port}"
  time_scale  = var.time_scale
  api_key     = var.api_key
  cache_reset = "/reset_prefix_cache"
}

workload "capacity" {
  corpus           = "synthetic-summary"
  corpus_seed      = 4342
  nominal_context  = 10240
  max_tokens       = 2048
  temperature      = 1
  top_p            = 0.95
  reasoning_effort = "max"
  prefixes         = "unique"
}

gate "before_block" {
  health   = true
  idle     = true
  identity = true
}

# Offline fixture/oracle check before anything touches the target.
step "exec" "oracle" {
  command       = ["sh", "-c", "grep -c PASS fixtures/oracle.txt && ! grep -q FAIL fixtures/oracle.txt"]
  inputs        = ["fixtures/oracle.txt"]
  failure_class = "gate"
  timeout       = "30s"
  rerun_safe    = true # reads a file; safe to run again after a crash
}

# On a real host the incumbent is already running; on the simulator we start it.
step "deploy" "incumbent" {
  target     = target.incumbent
  phase      = "setup"
  timeout    = "1m"
  rerun_safe = true # deploying again converges on the same target
}

# The pilot sends a corpus of its own (the pilot lane), cold: no measured block sends
# its prompts.
step "block" "pilot" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = each.value
  requests    = 16
  gates       = [gate.before_block]
  phase       = "pilot"
  timeout     = "2m"
  uses        = ["gpu"]
  depends_on  = [step.deploy.incumbent]
  # A pilot interrupted by a crash runs again with new request IDs; the interrupted
  # attempt's records stay in the evidence. Measured blocks are never re-sent.
  rerun_safe = true
}

# Seed 001: counts targeting a fixed block time, rounded up to a multiple of the
# concurrency, capped; frozen before any candidate traffic. block_seconds 0.8 at time
# scale 0.02 stands for 40 s of the seed's serving: about a third of its 120 s blocks.
step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(64, ceil_multiple(b.requests * var.block_seconds / b.elapsed_s, b.concurrency))
  }
}

step "deploy" "candidate" {
  target     = target.candidate
  outage     = "begin"
  timeout    = "1m"
  rerun_safe = true
}

step "deploy" "incumbent_again" {
  target     = target.incumbent
  timeout    = "1m"
  rerun_safe = true
}

# Seed 001's cache protocol: each cell has its own corpus (seeds 4342 and 4642), which
# the priming block sends once and both repetitions send again; every arm resets its
# target's prefix cache before the first block of each cell, so the second candidate
# arm does not inherit the first one's cache.
matrix "primary" {
  workload    = workload.capacity
  corpus_seed = { c1 = 4342, c4 = 4642 }
  concurrency = [1, 4]
  repetitions = 2
  priming     = true
  requests    = step.freeze.counts.values
  timeout     = "2m"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  # ABBA: the incumbent before and after the candidate measures drift.
  arm "incumbent_before" {
    target      = target.incumbent
    setup       = [step.deploy.incumbent]
    reset_cache = true
  }
  arm "candidate_1" {
    target      = target.candidate
    setup       = [step.deploy.candidate]
    reset_cache = true
  }
  arm "candidate_2" {
    target      = target.candidate
    reset_cache = true
  }
  arm "incumbent_after" {
    target      = target.incumbent
    setup       = [step.deploy.incumbent_again]
    reset_cache = true
  }
}

step "restore" "incumbent" {
  target          = target.incumbent
  always          = true
  outage          = "end"
  timeout         = "5m"
  protected_files = ["fixtures/oracle.txt"]
}

# Pre-registered before any candidate traffic (seed 001, point 8): the candidate is
# promoted only if the 95% interval of its C4 throughput gain over the incumbent
# (the mean of the incumbent blocks before and after it, repetition by repetition)
# lies above 5%, C1 stays within 3% of regression, no compared or drift-control
# cell lost a request, every block passes its validity checks, and the incumbent
# drifted less than half the smallest effect the rule must resolve. The report
# states the minimum detectable effect of 2 repetitions from the pilot.
decision "promotion" {
  matrix                   = step.block.primary
  primary_metric           = "aggregate_output_tok_s"
  primary_cells            = ["c4"]
  baseline_arm             = "incumbent_before"
  candidate_arm            = "candidate_1"
  protected_cells          = ["c1"]
  min_gain                 = 0.05
  max_protected_regression = 0.03
  matched_repetitions      = 2
  criterion                = "interval"
}
