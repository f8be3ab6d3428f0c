# Bad input on a real Docker Engine: each step fails with a specific message naming
# the object, and on_failure = "continue" lets one apply show them all.

campaign "docker-bad" {}

variable "context" { type = string }
variable "prefix" { type = string }
variable "labels" { type = map(string) }
variable "port" { type = number }
variable "taken_port" { type = number }

host "local" {
  runtime = "docker"
}

step "build" "sim" {
  host       = host.local
  context    = var.context
  dockerfile = "Dockerfile.incumbent"
  tags       = ["${var.prefix}-bad:latest"]
  labels     = var.labels
}

step "build" "no_context" {
  host       = host.local
  context    = "${var.context}/does-not-exist"
  on_failure = "continue"
}

target "running" {
  host      = host.local
  container = "${var.prefix}-running"
  image     = step.build.sim.image_id
  command   = ["--time-scale", "0.02"]
  ports     = ["127.0.0.1:${var.port}:8000"]
  endpoint  = "http://127.0.0.1:${var.port}"
  labels    = var.labels
}

target "ghost" {
  host      = host.local
  container = "${var.prefix}-ghost"
  image     = step.build.sim.image_id
  endpoint  = "http://127.0.0.1:${var.port}"
}

target "squatter" {
  host      = host.local
  container = "${var.prefix}-squatter"
  image     = step.build.sim.image_id
  ports     = ["127.0.0.1:${var.taken_port}:8000"]
  endpoint  = "http://127.0.0.1:${var.taken_port}"
  labels    = var.labels
}

# Two containers that stop while rigor waits for their health (a path the
# simulator never answers): one exits on a flag it does not know, one allocates
# 128 MiB a second after start under a 32 MiB limit and is OOM-killed.
variable "exit_port" { type = number }
variable "oom_port" { type = number }

target "exits" {
  host        = host.local
  container   = "${var.prefix}-exits"
  image       = step.build.sim.image_id
  command     = ["--no-such-flag"]
  ports       = ["127.0.0.1:${var.exit_port}:8000"]
  endpoint    = "http://127.0.0.1:${var.exit_port}"
  health_path = "/never"
  labels      = var.labels
}

target "oom_early" {
  host        = host.local
  container   = "${var.prefix}-oom-early"
  image       = step.build.sim.image_id
  command     = ["--time-scale", "0.5", "--allocate-mb", "128", "--allocate-after", "1s"]
  ports       = ["127.0.0.1:${var.oom_port}:8000"]
  endpoint    = "http://127.0.0.1:${var.oom_port}"
  health_path = "/never"
  memory      = "32MiB"
  labels      = var.labels
}

step "deploy" "running" {
  target     = target.running
  timeout    = "1m"
  depends_on = [step.build.no_context]
}

step "identity" "wrong_image" {
  target     = target.running
  image      = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
  on_failure = "continue"
  depends_on = [step.deploy.running]
}

step "identity" "missing" {
  target     = target.ghost
  on_failure = "continue"
  depends_on = [step.identity.wrong_image]
}

step "deploy" "port_taken" {
  target     = target.squatter
  timeout    = "30s"
  on_failure = "continue"
  depends_on = [step.identity.missing]
}

step "deploy" "exits" {
  target     = target.exits
  timeout    = "1m"
  on_failure = "continue"
  depends_on = [step.deploy.port_taken]
}

step "deploy" "oom_early" {
  target     = target.oom_early
  timeout    = "1m"
  on_failure = "continue"
  depends_on = [step.deploy.exits]
}
