# want: "Invalid phase" line 11
# detail: Did you mean "measured"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = ["true"]
  phase   = "measure"
}
