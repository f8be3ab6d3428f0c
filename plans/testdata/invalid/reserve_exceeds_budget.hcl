# want: "Outage reserve exceeds budget" line 5
campaign "c" {
  outage {
    budget  = "20m"
    reserve = "20m"
  }
}
