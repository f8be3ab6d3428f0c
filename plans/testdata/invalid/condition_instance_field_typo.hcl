# want: "Unknown outcome field" line 17 col 55
# detail: outcome.block.primary["incumbent/c1/r1"] has no field "faild_requests". Did you mean "failed_requests"?
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
step "exec" "extended" {
  condition = outcome.block.primary["incumbent/c1/r1"].faild_requests == 0
  command   = ["true"]
}
