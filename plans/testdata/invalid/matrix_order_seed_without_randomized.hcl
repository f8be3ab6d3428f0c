# want: "Seed without a randomized order" line 15
# detail: order_seed draws a randomized order; this matrix's order is "declared".
campaign "c" {}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  arm "a" {
    target = target.incumbent
  }
  order_seed  = 3
}
