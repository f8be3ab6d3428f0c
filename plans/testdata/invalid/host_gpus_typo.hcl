# want: "Invalid value" line 11 col 10
# detail: "simm" is not a GPU source
# detail: Did you mean "sim"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "h" {
  gpus = "simm"
}
