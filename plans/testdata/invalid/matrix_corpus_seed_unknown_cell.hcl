# want: "Unknown cell" line 20
# detail: corpus_seed has an entry "c8", but the matrix runs no concurrency 8 (cells: c1, c4).
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
  corpus_seed = { c1 = 4342, c4 = 4642, c8 = 1 }
  arm "a" {
    target = target.incumbent
  }
}
