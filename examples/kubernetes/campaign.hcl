# kubernetes: the seed's lifecycle on a real Kubernetes cluster with no registry and
# no GPU. The incumbent and the candidate are Deployments of the simulator (the
# static rigor binary in images FROM scratch, deployments.yaml), both serving
# 127.0.0.1:${var.port} on the node's network. identity records the incumbent's pods
# (pod UIDs, container IDs, image IDs, restart counts, nodes); deploying the
# candidate saves the incumbent's full Deployment and scales it to 0 (the outage
# opens when its last pod is gone); an ABBA matrix measures incumbent, candidate,
# incumbent again; restore applies the saved Deployment again with its exact image
# ID and verifies it (the outage closes; receipt.json is written).
#
# Every block's load comes from three `rigor agent` pods of an Indexed Job
# (agents.yaml): the block step hands pod k shard k and merges their records.
#
# The test cluster (.ci/kube/cluster.sh up) prints the kubeconfig; with images
# imported into its containerd (.ci/kube/cluster.sh load IMAGE) and
# deployments.yaml and agents.yaml applied in a namespace:
#
#   rigor plan apply examples/kubernetes/campaign.hcl --state runs/kube \
#     --var kubeconfig=$RIGOR_KUBECONFIG --var namespace=NAMESPACE
#
# examples/kubernetes/kubernetes_test.go does all of that against the test cluster.
# Without a cluster, `rigor plan show` and `rigor plan validate` work as anywhere.

campaign "kubernetes" {
  description = "Identity, deploy, an ABBA matrix and exact restore of Deployments of the simulator on Kubernetes."
  frozen      = ["fixtures/discovery.json"]

  outage {
    budget  = "12m" # the candidate's deploy and block, the incumbent's, at their bounds: 8m
    reserve = "3m"  # restore at its bound
  }
}

variable "kubeconfig" {
  type        = string
  default     = ""
  description = "Absolute path of the kubeconfig of the cluster (the test cluster's is $RIGOR_KUBECONFIG); empty means KUBECONFIG, ~/.kube/config or the in-cluster service account."
}

variable "context" {
  type        = string
  default     = ""
  description = "Context of the kubeconfig; empty means its current context."
}

variable "namespace" {
  type        = string
  default     = "rigor-example"
  description = "Namespace the two Deployments of deployments.yaml were applied in."
}

variable "port" {
  type        = number
  default     = 19210
  description = "Port both Deployments serve on 127.0.0.1 (hostNetwork): they take turns on one endpoint."
}

variable "agents" {
  type        = list(string)
  default     = ["tcp://127.0.0.1:19220", "tcp://127.0.0.1:19221", "tcp://127.0.0.1:19222"]
  description = "The load agents of agents.yaml (an Indexed Job), in completion-index order: agent k sends shard k of every block."
}

variable "requests" {
  type    = number
  default = 9
}

variable "max_tokens" {
  type    = number
  default = 128
}

host "cluster" {
  runtime    = "kubernetes"
  kubeconfig = var.kubeconfig
  context    = var.context
  namespace  = var.namespace
  gpus       = "sim"
}

target "incumbent" {
  host           = host.cluster
  deployment     = "sim-incumbent"
  image          = "rigor-kube-example/sim:incumbent"
  model          = "glm53-local"
  endpoint       = "http://127.0.0.1:${var.port}"
  health_timeout = "60s"
  cache_reset    = "/reset_prefix_cache"
}

target "candidate" {
  host           = host.cluster
  deployment     = "sim-candidate"
  image          = "rigor-kube-example/sim:candidate"
  model          = "glm53-local"
  endpoint       = "http://127.0.0.1:${var.port}"
  health_timeout = "60s"
  cache_reset    = "/reset_prefix_cache"
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

# On a production cluster the incumbent already runs and this changes nothing.
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
  target  = target.candidate
  outage  = "begin"
  timeout = "2m"
}

step "deploy" "incumbent_again" {
  target  = target.incumbent
  timeout = "2m"
}

# ABBA: the incumbent before and after the candidate measures drift.
matrix "primary" {
  workload    = workload.capacity
  concurrency = [3]
  repetitions = 1
  requests    = { c3 = var.requests }
  timeout     = "2m"
  gates       = [gate.before_block]
  agents      = var.agents

  arm "incumbent_before" {
    target      = target.incumbent
    setup       = [step.identity.incumbent]
    reset_cache = true
  }
  arm "candidate" {
    target      = target.candidate
    setup       = [step.deploy.candidate]
    reset_cache = true
  }
  arm "incumbent_after" {
    target      = target.incumbent
    setup       = [step.deploy.incumbent_again]
    reset_cache = true
  }
}

step "restore" "incumbent" {
  target          = target.incumbent
  always          = true
  outage          = "end"
  timeout         = "3m"
  protected_files = ["fixtures/discovery.json"]
}
