# A small variant of examples/quickstart for the report's golden state directories:
# ABBA arms (incumbent before, candidate, incumbent after), C1 and C2, one priming
# block and two measured repetitions per cell, and a pre-registered decision rule.
# Faults are injected through variables.

campaign "report-golden" {
  description = "Small incumbent vs candidate campaign on the simulator, for the report's golden tests."

  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

variable "port" {
  type    = number
  default = 18181
}

variable "time_scale" {
  type    = number
  default = 0.004
}

variable "block_seconds" {
  type    = number
  default = 0.1
}

variable "incumbent_exhaustion" {
  type    = number
  default = 0
}

variable "candidate_omit_usage" {
  type    = number
  default = 0
}

host "laptop" {
  runtime = "sim"
  gpus    = "sim"
}

target "incumbent" {
  host       = host.laptop
  container  = "golden-incumbent"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:${var.port}"
  time_scale = var.time_scale
  faults     = { reasoning_exhaustion_rate = var.incumbent_exhaustion }
}

target "candidate" {
  host       = host.laptop
  container  = "golden-candidate"
  profile    = "flare"
  endpoint   = "http://127.0.0.1:${var.port}"
  time_scale = var.time_scale
  faults     = { omit_usage_rate = var.candidate_omit_usage }
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

step "deploy" "incumbent" {
  target  = target.incumbent
  phase   = "setup"
  timeout = "1m"
}

step "block" "pilot" {
  for_each    = { c1 = 1, c2 = 2 }
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = each.value
  requests    = 4
  gates       = [gate.before_block]
  phase       = "pilot"
  timeout     = "2m"
  uses        = ["gpu"]
  depends_on  = [step.deploy.incumbent]
}

step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(12, ceil_multiple(b.requests * var.block_seconds / b.elapsed_s, b.concurrency))
  }
}

step "deploy" "candidate" {
  target  = target.candidate
  outage  = "begin"
  timeout = "1m"
}

step "deploy" "incumbent_again" {
  target  = target.incumbent
  timeout = "1m"
}

matrix "primary" {
  workload    = workload.capacity
  concurrency = [1, 2]
  repetitions = 2
  priming     = true
  requests    = step.freeze.counts.values
  timeout     = "2m"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "incumbent" {
    target = target.incumbent
    setup  = [step.deploy.incumbent]
  }
  arm "candidate" {
    target = target.candidate
    setup  = [step.deploy.candidate]
  }
  arm "incumbent_after" {
    target = target.incumbent
    setup  = [step.deploy.incumbent_again]
  }
}

decision "promotion" {
  primary_metric           = "aggregate_output_tok_s"
  primary_cells            = ["c2"]
  baseline_arm             = "incumbent"
  candidate_arm            = "candidate"
  protected_cells          = ["c1"]
  min_gain                 = 0.05
  max_protected_regression = 0.03
  matched_repetitions      = 2
}

step "restore" "incumbent" {
  target  = target.incumbent
  always  = true
  outage  = "end"
  timeout = "5m"
}
