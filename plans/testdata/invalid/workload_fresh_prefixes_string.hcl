# want: "Incorrect attribute value type" line 10 col 20
# detail: fresh_prefixes: Want true or false (without quotes), got string "yes".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  fresh_prefixes = "yes"
}
