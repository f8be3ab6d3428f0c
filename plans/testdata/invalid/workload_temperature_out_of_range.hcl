# want: "Invalid value" line 11 col 17
# detail: temperature: -3 is out of range: want a number from 0 to 2.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  max_tokens  = 64
  temperature = -3
}
