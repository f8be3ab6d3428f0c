# want: "Incorrect attribute value type" line 10 col 23
# detail: power_limit_watts: Want a number greater than 0, got string "300W".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  power_limit_watts = "300W"
}
