# want: "Invalid value" line 11 col 14
# detail: "podman" is not a runtime
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  runtime  = "podman"
}
