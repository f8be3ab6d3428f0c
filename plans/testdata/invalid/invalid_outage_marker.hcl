# want: "Invalid outage marker" line 10
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = ["true"]
  outage  = "start"
}
