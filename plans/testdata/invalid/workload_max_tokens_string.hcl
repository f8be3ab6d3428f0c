# want: "Incorrect attribute value type" line 10 col 16
# detail: workload "w", max_tokens: Want a whole number >= 1, got string "lots".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  max_tokens = "lots"
}
