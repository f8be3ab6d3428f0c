# want: "Invalid value" line 11 col 14
# detail: "uniq" is not a prefix mode
# detail: Did you mean "unique"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  prefixes = "uniq"
}
