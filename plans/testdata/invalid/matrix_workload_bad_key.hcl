# want: "Incorrect attribute value type" line 17
# detail: workload must be a workload reference such as workload.capacity, or a map of them keyed by cell
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {
  corpus_seed = 1
}

matrix "m" {
  workload    = { c1 = workload.w, c4x = workload.w }
  concurrency = [1, 4]
  requests    = 8
  arm "a" {
    target = target.incumbent
  }
}
