# want: "Dependency cycle" line 12
# detail: step.deploy.candidate refers to target.candidate
# detail: target.candidate refers to step.deploy.candidate
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
  image    = step.deploy.candidate.identity
}
step "deploy" "candidate" {
  target = target.candidate
}
