# want: "Outage end on a step that may not run" line 15
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "candidate" {
  target = target.incumbent
  outage = "begin"
}
step "restore" "incumbent" {
  target = target.incumbent
  outage = "end"
}
