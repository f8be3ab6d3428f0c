# want: "Reference of the wrong kind" line 14 col 29
# detail: gates names workload.w, a workload block; it must name a gate block such as gate.idle.
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
gate "idle" {
  idle = true
}
step "block" "b" {
  target      = target.t
  workload    = workload.w
  gates       = [gate.idle, workload.w]
  concurrency = 1
  requests    = 8
}
