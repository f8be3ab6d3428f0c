# docker-local: the seed's lifecycle on a real Docker Engine with no registry and no
# GPU. Two images are built FROM scratch from the static rigor binary (the simulator
# server), the incumbent runs, identity is checked, the candidate is deployed (the
# outage opens), blocks run against both, and the exact incumbent is restored (same
# container ID, same image ID; the outage closes; receipt.json is written).
#
# From the repository root:
#
#   make docker-local         # build context, cmd/rigor/bin/rigor, then plan apply
#   make docker-local-clean   # remove its containers and images
#
# make docker-local-context writes the build context (the static rigor binary and
# the Dockerfiles of the incumbent, the candidate and the load agent) to
# examples/docker-local/context/, this file's default
# var.context; any other directory goes with --var context=DIR.
#
# Everything it creates is named "${var.prefix}-…" and labelled with var.labels:
# two containers on the default bridge network, no volume (the incumbent left
# running, as a restored incumbent is; the candidate stopped), and two images.

campaign "docker-local" {
  description = "Build, identity, deploy, blocks and exact restore on the local Docker Engine."
  frozen      = ["fixtures/discovery.json"]

  outage {
    budget  = "10m"
    reserve = "3m"
  }
}

variable "context" {
  type        = string
  default     = "context"
  description = "Build context directory (relative to this file, or absolute): the static rigor binary (CGO_ENABLED=0) and Dockerfile.incumbent/Dockerfile.candidate."
}

variable "docker_host" {
  type        = string
  default     = ""
  description = "Docker Engine URL (unix:// or tcp://); empty means DOCKER_HOST or the local socket."
}

variable "prefix" {
  type        = string
  default     = "rigor-docker-local"
  description = "Prefix of every container and image tag this campaign creates."
}

variable "labels" {
  type        = map(string)
  default     = { "rigor.example" = "docker-local" }
  description = "Labels put on every image and container this campaign creates."
}

variable "port" {
  type        = number
  default     = 18090
  description = "Host port both targets publish on 127.0.0.1: they take turns on one endpoint."
}

variable "time_scale" {
  type        = number
  default     = 0.02
  description = "Simulator time scale inside the containers."
}

variable "requests" {
  type    = number
  default = 8
}

variable "max_tokens" {
  type    = number
  default = 256
}

host "local" {
  runtime = "docker"
  docker  = var.docker_host
  gpus    = "sim"
}

step "build" "incumbent" {
  host       = host.local
  context    = var.context
  dockerfile = "Dockerfile.incumbent"
  tags       = ["${var.prefix}-incumbent:latest"]
  labels     = var.labels
  cpus       = 1
  memory     = "512MiB"
  timeout    = "3m"
}

# Built beside live inference in the seed: limited, and never touching a container.
step "build" "candidate" {
  host       = host.local
  context    = var.context
  dockerfile = "Dockerfile.candidate"
  tags       = ["${var.prefix}-candidate:latest"]
  labels     = var.labels
  cpus       = 1
  memory     = "512MiB"
  timeout    = "3m"
}

target "incumbent" {
  host           = host.local
  container      = "${var.prefix}-incumbent"
  image          = step.build.incumbent.image_id
  command        = ["--time-scale", tostring(var.time_scale), "--model", "glm53-local"]
  model          = "glm53-local"
  ports          = ["127.0.0.1:${var.port}:8000"]
  endpoint       = "http://127.0.0.1:${var.port}"
  labels         = var.labels
  memory         = "256MiB"
  shm_size       = "64MiB"
  health_timeout = "30s"
}

target "candidate" {
  host           = host.local
  container      = "${var.prefix}-candidate"
  image          = step.build.candidate.image_id
  command        = ["--time-scale", tostring(var.time_scale), "--model", "glm53-local"]
  model          = "glm53-local"
  ports          = ["127.0.0.1:${var.port}:8000"]
  endpoint       = "http://127.0.0.1:${var.port}"
  labels         = var.labels
  memory         = "256MiB"
  shm_size       = "64MiB"
  health_timeout = "30s"
}

workload "capacity" {
  corpus          = "synthetic-summary"
  corpus_seed     = 4342
  nominal_context = 2048
  max_tokens      = var.max_tokens
  temperature     = 1
  top_p           = 0.95
  prefixes        = "unique"
}

gate "before_block" {
  health   = true
  idle     = true
  identity = true
}

# On a production host the incumbent already runs and this is identity only.
step "deploy" "incumbent" {
  target  = target.incumbent
  phase   = "setup"
  timeout = "1m"
}

step "identity" "incumbent" {
  target     = target.incumbent
  depends_on = [step.deploy.incumbent]
}

step "block" "incumbent" {
  target      = target.incumbent
  workload    = workload.capacity
  concurrency = 2
  requests    = var.requests
  gates       = [gate.before_block]
  timeout     = "2m"
  depends_on  = [step.identity.incumbent]
}

step "deploy" "candidate" {
  target     = target.candidate
  outage     = "begin"
  timeout    = "1m"
  depends_on = [step.block.incumbent]
}

step "identity" "candidate" {
  target     = target.candidate
  depends_on = [step.deploy.candidate]
}

step "block" "candidate" {
  target      = target.candidate
  workload    = workload.capacity
  concurrency = 2
  requests    = var.requests
  gates       = [gate.before_block]
  timeout     = "2m"
  depends_on  = [step.identity.candidate]
}

step "restore" "incumbent" {
  target          = target.incumbent
  always          = true
  outage          = "end"
  timeout         = "2m"
  protected_files = ["fixtures/discovery.json"]
}
