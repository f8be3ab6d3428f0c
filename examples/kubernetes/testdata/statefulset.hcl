# Both targets as StatefulSets (testdata/statefulset.yaml): deploying the candidate
# saves the incumbent's StatefulSet and scales it to 0; the candidate's block runs;
# restore stops the candidate's StatefulSet and applies the incumbent's saved object
# again with its exact image ID. Used by TestStatefulSets.
campaign "kube-statefulsets" {
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
  host        = host.cluster
  statefulset = "sim-incumbent"
  image       = "rigor-kube-example/sim:incumbent"
  model       = "glm53-local"
  endpoint    = "http://127.0.0.1:${var.port}"
}

target "candidate" {
  host        = host.cluster
  statefulset = "sim-candidate"
  image       = "rigor-kube-example/sim:candidate"
  model       = "glm53-local"
  endpoint    = "http://127.0.0.1:${var.port}"
}

workload "w" {
  nominal_context = 1024
  max_tokens      = 64
}

gate "before_block" {
  health   = true
  idle     = true
  identity = true
}

# The test's StatefulSets were just created: this waits for the incumbent's pod.
step "deploy" "incumbent" {
  target  = target.incumbent
  phase   = "setup"
  timeout = "3m"
}

step "identity" "incumbent" {
  target     = target.incumbent
  depends_on = [step.deploy.incumbent]
}

step "deploy" "candidate" {
  target     = target.candidate
  outage     = "begin"
  timeout    = "2m"
  depends_on = [step.identity.incumbent]
}

step "block" "candidate" {
  target      = target.candidate
  workload    = workload.w
  concurrency = 3
  requests    = 9
  gates       = [gate.before_block]
  agents      = var.agents
  timeout     = "1m"
  depends_on  = [step.deploy.candidate]
}

step "restore" "incumbent" {
  target     = target.incumbent
  always     = true
  outage     = "end"
  timeout    = "3m"
  depends_on = [step.block.candidate]
}
