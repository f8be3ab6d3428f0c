# want: "Reference of the wrong kind" line 13 col 45
# detail: workload names gate.long, a gate block; it must name a workload block such as workload.long. Did you mean workload.long?
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
workload "long" {}
workload "short" {}
gate "long" {
  idle = true
}
matrix "primary" {
  workload    = { c1 = workload.short, c4 = gate.long }
  concurrency = [1, 4]
  requests    = 8
  arm "incumbent" {
    target = target.inc
  }
}
