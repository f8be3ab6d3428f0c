# want: "Duplicate agent" line 15
# detail: tcp://10.0.0.1:7070 is listed twice
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
  concurrency = [1]
  agents      = ["tcp://10.0.0.1:7070", "tcp://10.0.0.1:7070"]
  requests    = 8
  arm "a" {
    target = target.incumbent
  }
}
workload "w" {}
