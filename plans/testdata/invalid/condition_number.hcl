# want: "Invalid condition" line 9 col 15
# detail: A condition must be true or false, and this one is a number.
campaign "c" {}
step "exec" "y" {
  command = ["true"]
}
step "exec" "z" {
  command   = ["true"]
  condition = outcome.exec.y.failed_requests
}
