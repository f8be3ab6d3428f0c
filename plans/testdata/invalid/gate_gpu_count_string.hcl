# want: "Incorrect attribute value type" line 10 col 15
# detail: gpu_count: Want a whole number >= 1, got string "2".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  gpu_count = "2"
}
