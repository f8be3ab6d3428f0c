# want: "Missing required argument" line 9
# detail: The argument "command" is required
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
}
