# want: "Incorrect attribute value type" line 11 col 14
# detail: Want a host block reference such as host.node, got string.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  host     = "node"
}
