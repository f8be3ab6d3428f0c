# want: "Invalid value" line 11 col 14
# detail: "every": want "all", a count or a list of device IDs
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  gpus     = "every"
}
