# want: "Invalid agent address" line 15
# detail: "http://10.0.0.2:7070" is not an agent address: want tcp://HOST:PORT
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "b" {
  target      = target.incumbent
  agents      = ["tcp://10.0.0.1:7070", "http://10.0.0.2:7070"]
  workload    = workload.w
  concurrency = 4
  requests    = 8
}
