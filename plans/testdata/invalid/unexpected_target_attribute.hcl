# want: "Unsupported argument" line 11
# detail: Valid arguments for target blocks:
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
  imgae    = "sha256:00"
}
