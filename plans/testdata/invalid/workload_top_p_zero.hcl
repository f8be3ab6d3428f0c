# want: "Invalid value" line 10 col 11
# detail: top_p: 0 is out of range: want a number greater than 0 and at most 1.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  top_p = 0
}
