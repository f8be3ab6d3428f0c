# want: "Invalid value" line 15
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  repetitions = 0
  arm "a" {
    target = target.incumbent
  }
}
workload "w" {}
