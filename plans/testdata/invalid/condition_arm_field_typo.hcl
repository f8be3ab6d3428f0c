# want: "Unknown outcome field" line 23 col 44
# detail: outcome.arm.primary.incumbent has no field "cleen". Did you mean "clean"? Its fields: clean, failed_blocks, failed_requests, reason, settled, stopped.
campaign "c" {}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
matrix "primary" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  arm "incumbent" {
    target = target.incumbent
  }
}
matrix "extended" {
  workload    = workload.w
  concurrency = [4]
  requests    = 8
  arm "incumbent" {
    target = target.incumbent
  }
  condition = outcome.arm.primary.incumbent.cleen
}
