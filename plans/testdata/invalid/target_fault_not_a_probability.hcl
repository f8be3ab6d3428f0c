# want: "Invalid value" line 11 col 14
# detail: http_error_rate = 1.5 is not a probability
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  faults   = { http_error_rate = 1.5 }
}
