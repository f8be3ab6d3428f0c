# want: "Value must be known at plan time" line 23
# detail: corpus_seed identifies the corpus; it must be known before anything runs
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

step "exec" "seed" {
  command = ["true"]
}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  corpus_seed = step.exec.seed.exit_code
  arm "a" {
    target = target.incumbent
  }
}
