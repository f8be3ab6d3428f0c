# The candidate's endpoint taken over mid-block: an open-loop block (requests keep
# arriving whatever happens to the server) on the candidate, from the agents' Indexed
# Job, while TestEndpointTakenOver scales the candidate to 0 behind rigor's back and
# starts a bare pod of the incumbent's image on the same address.
campaign "kube-takeover" {
  outage {
    budget  = "8m"
    reserve = "3m"
  }
}

variable "kubeconfig" { type = string }
variable "namespace" { type = string }
variable "port" { type = number }
variable "agents" { type = list(string) }

host "cluster" {
  runtime    = "kubernetes"
  kubeconfig = var.kubeconfig
  namespace  = var.namespace
  gpus       = "sim"
}

target "incumbent" {
  host       = host.cluster
  deployment = "sim-incumbent"
  image      = "rigor-kube-example/sim:incumbent"
  model      = "glm53-local"
  endpoint   = "http://127.0.0.1:${var.port}"
}

target "candidate" {
  host       = host.cluster
  deployment = "sim-candidate"
  image      = "rigor-kube-example/sim:candidate"
  model      = "glm53-local"
  endpoint   = "http://127.0.0.1:${var.port}"
}

workload "w" {
  nominal_context = 1024
  max_tokens      = 64
}

step "deploy" "candidate" {
  target  = target.candidate
  outage  = "begin"
  timeout = "2m"
}

step "block" "taken" {
  target      = target.candidate
  workload    = workload.w
  mode        = "open"
  concurrency = 6
  rate        = 8
  requests    = 120
  agents      = var.agents
  timeout     = "1m"
  depends_on  = [step.deploy.candidate]
}

step "restore" "incumbent" {
  target  = target.incumbent
  always  = true
  outage  = "end"
  timeout = "2m"
}
