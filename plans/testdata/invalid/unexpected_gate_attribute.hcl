# want: "Unsupported argument" line 10
# detail: Did you mean "power_limit_watts"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  power_limit_wats = 300
}
