# want: "Outage without budget" line 6
campaign "c" {}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "candidate" {
  target = target.incumbent
  outage = "begin"
}
step "restore" "incumbent" {
  target = target.incumbent
  always = true
  outage = "end"
}
