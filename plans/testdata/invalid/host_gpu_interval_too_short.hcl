# want: "Invalid duration" line 11 col 18
# detail: want at least 1ms
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "h" {
  gpus         = "sim"
  gpu_interval = "10us"
}
