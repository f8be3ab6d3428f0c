# want: "Invalid for_each argument" line 16
# detail: for_each must be known at plan time
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "freeze" "counts" {
  values = { a = 1 }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "block" "b" {
  for_each = step.freeze.counts.values
  target   = target.incumbent
}
