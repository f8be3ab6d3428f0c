# want: "Duplicate campaign block" line 8
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
campaign "d" {
}
