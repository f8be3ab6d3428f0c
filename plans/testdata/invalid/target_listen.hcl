# want: "Unsupported argument" line 11 col 3
# detail: the simulator binds the endpoint's host:port
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  listen   = "127.0.0.1:8000"
}
