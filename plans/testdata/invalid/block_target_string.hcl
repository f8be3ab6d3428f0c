# want: "Incorrect attribute value type" line 9 col 17
# detail: target must be a target reference such as target.inc, not the string "inc". Did you mean target.inc?
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "b" {
  target      = "inc"
  workload    = workload.w
  concurrency = 1
  requests    = 8
}
