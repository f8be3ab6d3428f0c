# Three agents run as containers on the local Docker Engine (host network, so
# tcp://127.0.0.1:PORT reaches them and they reach the simulator) send one block
# and one matrix cell; docker_agents_test.go starts them from Dockerfile.agent.
campaign "docker-agents" {}

host "h" {
  runtime = "sim"
  gpus    = "sim"
}

target "t" {
  host       = host.h
  container  = "docker-agents-t"
  profile    = "incumbent"
  endpoint   = "http://127.0.0.1:19320"
  time_scale = 0.01
}

workload "w" {
  corpus     = "synthetic-summary"
  max_tokens = 32
}

step "deploy" "t" {
  target = target.t
}

step "block" "b" {
  target      = target.t
  workload    = workload.w
  concurrency = 6
  requests    = 30
  agents      = ["tcp://127.0.0.1:19321", "tcp://127.0.0.1:19322", "tcp://127.0.0.1:19323"]
  depends_on  = [step.deploy.t]
}
