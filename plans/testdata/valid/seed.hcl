# The seed campaign in miniature: pilot, frozen counts, an ABBA matrix, restore.
campaign "flare-wave1" {
  description = "ABBA comparison of flare against the incumbent"
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

variable "api_key" {
  sensitive = true
  default   = "sk-do-not-leak-0451"
}

variable "model" {
  type    = string
  default = "glm53"
}

host "node" {
  docker = "unix:///var/run/docker.sock"
  gpus   = "sim"
}

target "incumbent" {
  host      = host.node
  container = "glm53-incumbent"
  endpoint  = "http://127.0.0.1:8000"
  model     = var.model
  api_key   = var.api_key
}

target "flare" {
  host      = host.node
  container = "glm53-flare"
  endpoint  = "http://127.0.0.1:8001"
  model     = var.model
}

workload "capacity" {
  corpus          = "synthetic-summary"
  corpus_seed     = 4342
  nominal_context = 10240
  max_tokens      = 2048
  temperature     = 1
  top_p           = 0.95
}

gate "before_block" {
  health            = true
  idle              = true
  power_limit_watts = 300
}

step "block" "pilot" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = each.value
  requests    = 16
  phase       = "pilot"
}

# counts chosen from the pilot, then frozen before any candidate traffic
step "freeze" "counts" {
  values = {
    for k, b in step.block.pilot :
    k => min(256, ceil_multiple(120 / b.seconds_per_request, b.concurrency))
  }
}

step "deploy" "flare" {
  target = target.flare
  outage = "begin"
}

step "deploy" "incumbent_again" {
  target = target.incumbent
}

matrix "primary" {
  workload    = workload.capacity
  concurrency = [1, 4]
  repetitions = 3
  priming     = true
  requests    = step.freeze.counts.values
  timeout     = "600s"
  gates       = [gate.before_block]
  uses        = ["gpu"]

  arm "incumbent_before" {
    target = target.incumbent
  }
  arm "flare_control" {
    target = target.flare
    setup  = [step.deploy.flare]
  }
  arm "flare_instrumented" {
    target = target.flare
  }
  arm "incumbent_after" {
    target = target.incumbent
    setup  = [step.deploy.incumbent_again]
  }
}

step "restore" "incumbent" {
  target = target.incumbent
  always = true
  phase  = "restore"
  outage = "end"
}
