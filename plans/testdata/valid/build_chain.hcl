# An image build that a target depends on, typed variables, for_each over a set,
# depends_on, uses, on_failure, and a value waiting on two pilot instances.
campaign "build-chain" {
  frozen = ["corpus.jsonl"]
  outage {
    budget  = "1h30m"
    reserve = "600s"
  }
}

variable "concurrencies" {
  type    = list(number)
  default = [2, 8]
}

variable "api_key" {
  type      = string
  sensitive = true
  default   = "sk-do-not-leak-0451"
}

variable "label" {
  type    = string
  default = "baseline"
}

host "node" {
  gpus = "sim"
}

step "exec" "build" {
  command = ["docker", "build", "-t", "flare:${var.label}", "./flare"]
  timeout = "30m"
}

target "flare" {
  host     = host.node
  endpoint = "http://127.0.0.1:8001"
  image    = "flare:${step.exec.build.exit_code}"
  api_key  = var.api_key
}

workload "short" {
  corpus     = "synthetic-summary"
  max_tokens = 256
}

step "block" "pilot" {
  for_each    = { for c in var.concurrencies : "c${c}" => c }
  target      = target.flare
  workload    = workload.short
  concurrency = each.value
  requests    = 8
  phase       = "pilot"
  uses        = ["gpu"]
}

step "freeze" "total" {
  values = {
    requests = step.block.pilot["c2"].requests + step.block.pilot["c8"].requests
    budget_s = duration("90m")
    label    = upper(var.label)
  }
}

step "exec" "capture" {
  for_each   = ["trace", "nsys"]
  command    = ["capture", each.key]
  depends_on = [step.freeze.total]
  phase      = "diagnostic"
  on_failure = "continue"
}
