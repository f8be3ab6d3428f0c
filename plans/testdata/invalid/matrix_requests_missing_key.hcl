# want: "Missing request count" line 15
# detail: requests has no entry for concurrency 4; use the key "c4".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
matrix "m" {
  workload    = workload.w
  concurrency = [1, 4]
  requests    = { c1 = 52 }
  arm "a" {
    target = target.incumbent
  }
}
workload "w" {}
