# want: "Incorrect attribute value type" line 20
# detail: corpus_seed must be a whole number, or a map of whole numbers keyed by cell such as { c1 = 4342, c4 = 4642 }.
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
  workload    = workload.w
  concurrency = [1, 4]
  requests    = 8
  corpus_seed = "4342"
  arm "a" {
    target = target.incumbent
  }
}
