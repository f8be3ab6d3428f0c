# want: "Outage without restore" line 11
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "candidate" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "candidate" {
  target = target.candidate
  outage = "begin"
}
