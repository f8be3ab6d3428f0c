# want: "Second outage begin" line 18
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "candidate" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "candidate" {
  target = target.candidate
  outage = "begin"
}
step "deploy" "candidate_again" {
  target = target.candidate
  outage = "begin"
}
step "restore" "incumbent" {
  target = target.incumbent
  always = true
  outage = "end"
}
