# want: "Incorrect attribute value type" line 10 col 10
# detail: idle: Want true or false (without quotes), got string "yes".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  idle = "yes"
}
