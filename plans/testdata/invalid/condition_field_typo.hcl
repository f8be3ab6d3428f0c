# want: "Unknown outcome field" line 9 col 29
# detail: outcome.exec.y has no field "statuss". Did you mean "status"? Its fields: class, disposition, failed_requests, requests, status.
campaign "c" {}
step "exec" "y" {
  command = ["true"]
}
step "exec" "z" {
  command   = ["true"]
  condition = outcome.exec.y.statuss == "succeeded"
}
