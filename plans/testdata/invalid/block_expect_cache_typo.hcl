# want: "Invalid value" line 14 col 18
# types: steps
# detail: expect_cache: "warmm" is not one of "cold", "primed" or "shared".
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "b" {
  target       = target.t
  workload     = workload.w
  concurrency  = 1
  requests     = 8
  expect_cache = "warmm"
}
