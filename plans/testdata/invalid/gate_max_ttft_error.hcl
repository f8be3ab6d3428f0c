# want: "Unsupported argument" line 10 col 3
# detail: a setting of a calibrate step
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  max_ttft_error = "25ms"
}
