# want: "Two workloads for one target" line 18 col 3
# detail: target "glm" names a deployment (line 17) and a statefulset
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "k" {
  runtime   = "kubernetes"
  namespace = "serving"
}
target "glm" {
  host        = host.k
  endpoint    = "http://10.0.0.5:8000"
  image       = "vllm/vllm-openai@sha256:0000000000000000000000000000000000000000000000000000000000000000"
  deployment  = "glm53"
  statefulset = "glm53"
}
