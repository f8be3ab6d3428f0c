# want: "Incorrect attribute value type" line 10 col 14
# detail: gate "g", identity: Want true or false (without quotes), got string "true".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  identity = "true"
}
