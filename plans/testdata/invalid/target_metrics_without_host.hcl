# want: "Invalid URL" line 11 col 14
# detail: it names no host
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  metrics  = "http:///metrics"
}
