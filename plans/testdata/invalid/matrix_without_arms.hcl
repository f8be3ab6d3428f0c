# want: "Matrix has no arms" line 8
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
matrix "m" {
  workload    = workload.w
  concurrency = [1]
  requests    = 8
}
workload "w" {}
