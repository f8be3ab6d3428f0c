# want: "Invalid value" line 11 col 17
# detail: the reset call is a POST
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint    = "http://127.0.0.1:8000"
  cache_reset = "GET /reset_prefix_cache"
}
