# want: "Invalid cache state" line 20
# detail: expect_cache must be one of cold, primed, shared. Did you mean "primed"?
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
  workload     = workload.w
  concurrency  = [1]
  requests     = 8
  expect_cache = "prmied"
  arm "a" {
    target = target.incumbent
  }
}
