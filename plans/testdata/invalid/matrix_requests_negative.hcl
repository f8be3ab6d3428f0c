# want: "Invalid value" line 16 col 17
# detail: requests: -4 is out of range: want a whole number >= 1.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = -4
  arm "a" {
    target = target.t
  }
}
