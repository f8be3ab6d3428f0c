# want: "Reference of the wrong kind" line 14 col 17
# detail: workload names target.cand, a target block; it must name a workload block such as workload.w.
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
target "cand" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}
step "block" "b" {
  target      = target.inc
  # the target where its workload belongs
  workload    = target.cand
  concurrency = 1
  requests    = 8
}
