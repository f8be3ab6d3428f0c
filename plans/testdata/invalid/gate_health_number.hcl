# want: "Incorrect attribute value type" line 10 col 12
# detail: health: Want true or false (without quotes), got number.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  health = 1
}
