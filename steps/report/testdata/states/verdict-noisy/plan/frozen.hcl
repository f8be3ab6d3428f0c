# The verdict's campaigns for the report's tests: ABBA (incumbent before, candidate,
# incumbent after) at C2, four measured repetitions, a rule on C2 throughput with
# the interval criterion. Both targets run the same simulator profile; the
# variables set how much slower the incumbent is (the candidate's true gain), the
# block-to-block noise, and how much the incumbent slows down between its two arms
# (drift). Noise comes from natural output: request IDs differ per repetition, so
# output lengths do too. A short output cap without reasoning makes every request
# generate the same 64 tokens (low noise); natural output with few requests per
# block makes blocks differ by several percent (high noise).

campaign "report-verdict" {
  description = "Incumbent vs candidate with a known effect, noise and drift, for the verdict's tests."

  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

variable "port" {
  type    = number
  default = 18191
}

variable "time_scale" {
  type    = number
  default = 0.02
}

variable "block_seconds" {
  type    = number
  default = 0.3
}

variable "max_requests" {
  type        = number
  default     = 48
  description = "Cap of the frozen request counts: small caps make noisy blocks."
}

variable "incumbent_slowdown" {
  type        = number
  default     = 1.1
  description = "The incumbent's every delay × this: 1.1 makes the candidate about 10% faster."
}

variable "after_slowdown" {
  type        = number
  default     = 1
  description = "Extra slowdown injected into the running incumbent between the candidate and the incumbent-after arm (drift)."
}

variable "max_tokens" {
  type    = number
  default = 64
}

variable "reasoning_effort" {
  type    = string
  default = "none"
}

variable "corpus_seed" {
  type    = number
  default = 4342
}

host "laptop" {
  runtime = "sim"
  gpus    = "sim"
}

target "incumbent" {
  host       = host.laptop
  container  = "verdict-incumbent"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:${var.port}"
  time_scale = var.time_scale
  faults     = { slowdown = var.incumbent_slowdown }
}

target "candidate" {
  host       = host.laptop
  container  = "verdict-candidate"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:${var.port}"
  time_scale = var.time_scale
}

workload "capacity" {
  corpus           = "synthetic-summary"
  corpus_seed      = var.corpus_seed
  nominal_context  = 10240
  max_tokens       = var.max_tokens
  temperature      = 1
  top_p            = 0.95
  reasoning_effort = var.reasoning_effort
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
  for_each    = { c2 = 2 }
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = each.value
  requests    = 8
  gates       = [gate.before_block]
  phase       = "pilot"
  timeout     = "2m"
  uses        = ["gpu"]
  depends_on  = [step.deploy.incumbent]
}

step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(var.max_requests, ceil_multiple(b.requests * var.block_seconds / b.elapsed_s, b.concurrency))
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

# The same container, the same incarnation, slower: what only the drift control sees.
step "exec" "drift" {
  command    = ["curl", "-fsS", "-X", "POST", "--data", jsonencode({ slowdown = var.incumbent_slowdown * var.after_slowdown }), "http://127.0.0.1:${var.port}/debug/faults"]
  timeout    = "30s"
  depends_on = [step.deploy.incumbent_again]
}

matrix "primary" {
  workload    = workload.capacity
  concurrency = [2]
  repetitions = 4
  priming     = true
  requests    = step.freeze.counts.values
  timeout     = "2m"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "incumbent_before" {
    target = target.incumbent
    setup  = [step.deploy.incumbent]
  }
  arm "candidate" {
    target = target.candidate
    setup  = [step.deploy.candidate]
  }
  arm "incumbent_after" {
    target = target.incumbent
    setup  = [step.deploy.incumbent_again, step.exec.drift]
  }
}

decision "promotion" {
  primary_metric           = "aggregate_output_tok_s"
  primary_cells            = ["c2"]
  baseline_arm             = "incumbent_before"
  candidate_arm            = "candidate"
  min_gain                 = 0.05
  matched_repetitions      = 4
  criterion                = "interval"
  max_drift                = 0.10
}

step "restore" "incumbent" {
  target  = target.incumbent
  always  = true
  outage  = "end"
  timeout = "5m"
}
