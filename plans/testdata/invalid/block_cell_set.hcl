# want: "Argument set by a matrix" line 17 col 3
# types: steps
# detail: cell is set by a matrix for each block it expands into; a "block" step cannot set it. Remove it.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "b" {
  target      = target.t
  workload    = workload.w
  cell        = "c4"
  concurrency = 4
  requests    = 8
}
