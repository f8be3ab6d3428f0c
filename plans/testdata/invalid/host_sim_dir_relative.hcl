# want: "Invalid value" line 10 col 13
# detail: must be an absolute path
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "h" {
  sim_dir = "state/sim"
}
