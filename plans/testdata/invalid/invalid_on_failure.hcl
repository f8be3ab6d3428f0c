# want: "Invalid on_failure" line 10
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command    = ["true"]
  on_failure = "retry"
}
