# want: "Invalid value" line 12 col 14
# detail: "flarre" is not a simulator profile
# detail: Did you mean "flare"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  profile  = "flarre"
}
