# want: "Incorrect attribute value type" line 22
# detail: reset_cache must be true or false, known at plan time.
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
  concurrency = [1]
  requests    = 8
  arm "a" {
    target      = target.incumbent
    reset_cache = "yes"
  }
}
