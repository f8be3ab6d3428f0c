# want: "Reference to undeclared step" line 23
# detail: There is no step freeze.nope
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

# An arm's reset_cache is an expression like any other: what it names must exist.
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  arm "a" {
    target      = target.incumbent
    reset_cache = length([step.freeze.nope.values]) > 0
  }
}
