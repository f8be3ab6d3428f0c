# want: "Incorrect attribute value type" line 13 col 14
# detail: target must be a target reference such as target.inc, not the string "inc". Did you mean target.inc?
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
matrix "primary" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
  arm "incumbent" {
    target = "inc"
  }
}
