# want: "Invalid value" line 16 col 17
# types: steps
# detail: mode: "openn" is not one of "closed" or "open". Did you mean "open"?
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "b" {
  target      = target.t
  workload    = workload.w
  concurrency = 1
  requests    = 8
  # an open-loop block that would have failed only when it started
  rate        = 2
  mode        = "openn"
}
