# want: "Invalid duration" line 4
campaign "c" {
  outage {
    budget  = "90 minutes"
    reserve = "20m"
  }
}
