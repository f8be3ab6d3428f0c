# want: "Incorrect attribute value type" line 13
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "block" "a" {
  target      = target.incumbent
  concurrency = "four"
}
