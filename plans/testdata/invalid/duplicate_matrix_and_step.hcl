# want: "Duplicate matrix name" line 15
# detail: was already declared at
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "block" "pilot" {
  target = target.incumbent
}
matrix "pilot" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  arm "a" {
    target = target.incumbent
  }
}
workload "w" {}
