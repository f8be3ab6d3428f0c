# Two blocks on one container with a pause between them, during which the Go test
# restarts or signals the container: the second block must not accept it. Used by
# TestContainerChangedBetweenBlocks.

campaign "docker-between" {}

variable "context" { type = string }
variable "prefix" { type = string }
variable "labels" { type = map(string) }
variable "port" { type = number }

host "local" {
  runtime = "docker"
}

step "build" "sim" {
  host       = host.local
  context    = var.context
  dockerfile = "Dockerfile.incumbent"
  tags       = ["${var.prefix}-between:latest"]
  labels     = var.labels
}

target "incumbent" {
  host           = host.local
  container      = "${var.prefix}-between"
  image          = step.build.sim.image_id
  command        = ["--time-scale", "0.01", "--model", "m"]
  model          = "m"
  ports          = ["127.0.0.1:${var.port}:8000"]
  endpoint       = "http://127.0.0.1:${var.port}"
  labels         = var.labels
  health_timeout = "30s"
}

workload "w" {
  nominal_context  = 1024
  max_tokens       = 128
  reasoning_effort = "low"
}

gate "before_block" {
  health   = true
  identity = true
}

step "deploy" "incumbent" {
  target  = target.incumbent
  timeout = "1m"
}

step "block" "a" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  gates       = [gate.before_block]
  timeout     = "1m"
  depends_on  = [step.deploy.incumbent]
}

# The test acts on the container while this runs.
step "exec" "pause" {
  command    = ["sleep", "3"]
  depends_on = [step.block.a]
}

step "block" "b" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 1
  requests    = 2
  gates       = [gate.before_block]
  timeout     = "1m"
  depends_on  = [step.exec.pause]
}
