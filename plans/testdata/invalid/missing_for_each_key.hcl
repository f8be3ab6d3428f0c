# want: "Reference to undeclared instance" line 17
# detail: step.block.pilot has no instance with key "c2".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "block" "pilot" {
  for_each = { c1 = 1, c4 = 4 }
  target   = target.incumbent
}
step "freeze" "counts" {
  values = step.block.pilot["c2"].seconds_per_request
}
