# want: "Invalid value" line 12 col 16
# detail: "http_eror_rate" is not a fault
# detail: Did you mean "http_error_rate"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  faults   = { http_eror_rate = 0.5 }
}
