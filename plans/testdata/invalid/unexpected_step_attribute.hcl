# want: "Unsupported argument" line 11
# detail: Valid arguments for step type "exec": always, command, condition, count, depends_on, during, for_each, on_failure, outage, phase, rerun_safe, sequential, start_after, start_after_requests, timeout, uses.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = ["true"]
  comand  = ["false"]
}
