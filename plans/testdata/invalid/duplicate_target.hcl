# want: "Duplicate target name" line 11
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8001"
}
