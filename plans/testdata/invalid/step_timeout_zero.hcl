# want: "Invalid duration" line 11 col 13
# detail: timeout "0s": want a positive duration
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "e" {
  command = ["true"]
  timeout = "0s"
}
