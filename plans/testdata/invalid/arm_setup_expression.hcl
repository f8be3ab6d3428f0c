# want: "Invalid reference" line 20
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
  arm "a" {
    target = target.incumbent
  }
  arm "b" {
    target = target.incumbent
    setup  = [length("x")]
  }
}
workload "w" {}
