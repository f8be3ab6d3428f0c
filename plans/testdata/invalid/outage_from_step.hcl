# want: "Value must be known at plan time" line 5
# detail: The outage budget bounds the whole campaign, so it must be known before anything runs
campaign "c" {
  outage {
    budget  = step.freeze.budget.values.b
    reserve = "20m"
  }
}
step "freeze" "budget" {
  values = { b = "90m" }
}
