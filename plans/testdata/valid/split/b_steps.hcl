step "restore" "incumbent" {
  target = target.incumbent
  always = true
}

step "deploy" "incumbent" {
  target = target.incumbent
}
