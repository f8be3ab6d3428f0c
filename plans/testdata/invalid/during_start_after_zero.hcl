# want: "Invalid duration" line 18 col 17
# detail: start_after must be a positive duration such as "2s".
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "load" {
  target      = target.t
  workload    = workload.w
  concurrency = 4
  requests    = 64
}
step "exec" "capture" {
  command     = ["capture"]
  uses        = ["trace"]
  during      = step.block.load
  start_after = "0s"
}
