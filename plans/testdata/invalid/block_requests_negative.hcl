# want: "Invalid value" line 15 col 17
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
step "block" "b" {
  target      = target.t
  concurrency = 1
  requests    = -4
}
