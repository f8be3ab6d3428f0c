# want: "Invalid URL" line 10 col 14
# detail: "127.0.0.1:8000" is not a URL such as "http://127.0.0.1:8000"
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "127.0.0.1:8000"
}
