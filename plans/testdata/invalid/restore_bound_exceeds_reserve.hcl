# want: "Restore bound exceeds the reserve" line 19
# detail: restore.incumbent 30m0s
# detail: the outage reserve is 20m0s
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "candidate" {
  target  = target.incumbent
  outage  = "begin"
}
# A restore that may take 30 minutes cannot be what the 20-minute reserve keeps
# time for.
step "restore" "incumbent" {
  target  = target.incumbent
  always  = true
  outage  = "end"
  timeout = "30m"
}
