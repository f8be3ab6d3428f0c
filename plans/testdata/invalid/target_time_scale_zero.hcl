# want: "Invalid value" line 11 col 16
# detail: time_scale: 0 is out of range: want a number greater than 0.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint   = "http://127.0.0.1:8000"
  time_scale = 0
}
