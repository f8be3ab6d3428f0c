# want: "Reference to undeclared step" line 16
# detail: Did you mean "block.pilot"?
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
  target = target.incumbent
}
step "freeze" "counts" {
  values = step.block.pilto.seconds_per_request
}
