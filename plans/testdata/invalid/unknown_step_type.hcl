# want: "Unknown step type" line 12
# detail: There is no step type "blokc". Did you mean "block"? Registered step types: block, deploy, exec, freeze, restore.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "blokc" "a" {
  target = target.incumbent
}
