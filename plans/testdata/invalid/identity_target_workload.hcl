# want: "Reference of the wrong kind" line 10 col 12
# types: steps
# detail: target names workload.inc, a workload block; it must name a target block such as target.inc. Did you mean target.inc?
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
workload "inc" {}
step "identity" "incumbent" {
  target = workload.inc
}
