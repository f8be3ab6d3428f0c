# want: "Unsupported argument" line 11
# detail: Valid arguments for step type "exec": always, command, depends_on, for_each, on_failure, outage, phase, rerun_safe, timeout, uses.
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
