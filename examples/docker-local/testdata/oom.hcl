# A container with a tiny memory limit whose simulator allocates past it during a
# block: the block must fail with the stop-class "oom". Used by the Go tests.

campaign "docker-oom" {}

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
  tags       = ["${var.prefix}-oom:latest"]
  labels     = var.labels
}

target "oom" {
  host      = host.local
  container = "${var.prefix}-oom"
  image     = step.build.sim.image_id
  # 128 MiB allocated 3 s after start, under a 32 MiB limit with no swap.
  command  = ["--time-scale", "0.5", "--model", "m", "--allocate-mb", "128", "--allocate-after", "3s"]
  model    = "m"
  ports    = ["127.0.0.1:${var.port}:8000"]
  endpoint = "http://127.0.0.1:${var.port}"
  memory   = "32MiB"
  labels   = var.labels
}

workload "w" {
  nominal_context = 1024
  max_tokens      = 256
}

step "deploy" "oom" {
  target  = target.oom
  timeout = "1m"
}

step "block" "oom" {
  target      = target.oom
  workload    = workload.w
  concurrency = 1
  requests    = 32
  timeout     = "1m"
  depends_on  = [step.deploy.oom]
}
