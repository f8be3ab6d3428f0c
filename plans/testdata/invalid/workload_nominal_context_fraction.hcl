# want: "Invalid value" line 10 col 21
# detail: nominal_context: 1024.5 is not a whole number >= 1.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  nominal_context = 1024.5
}
