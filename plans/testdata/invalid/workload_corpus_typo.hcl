# want: "Invalid value" line 11 col 12
# detail: "synthetic-sumary" is not a corpus
# detail: Did you mean "synthetic-summary"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  corpus = "synthetic-sumary"
}
