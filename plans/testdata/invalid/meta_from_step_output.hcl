# want: "Value must be known at plan time" line 13
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "freeze" "t" {
  values = "60s"
}
step "exec" "a" {
  command = ["true"]
  timeout = step.freeze.t.values
}
