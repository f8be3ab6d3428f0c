# want: "Invalid during" line 25 col 14
# types: steps
# detail: trace.capture runs during block.load, which sends its requests to target.incumbent, but its own target is target.candidate
campaign "c" {}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}
step "block" "load" {
  target      = target.incumbent
  workload    = workload.w
  concurrency = 4
  requests    = 64
}
# A capture "under load" that would have observed the idle candidate while the
# block loaded the incumbent.
step "trace" "capture" {
  during   = step.block.load
  duration = "1s"
  ranks    = [0]
  uses     = ["trace"]
  target   = target.candidate
}
