# The smallest campaign: no outage, one step.
campaign "minimal" {
}

step "exec" "hello" {
  command = ["echo", "hello"]
}
