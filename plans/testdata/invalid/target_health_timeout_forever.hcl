# want: "Invalid duration" line 11 col 20
# detail: invalid duration "forever"
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint       = "http://127.0.0.1:8000"
  health_timeout = "forever"
}
