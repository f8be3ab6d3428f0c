# want: "Reference to undeclared target" line 13
# detail: There is no target named "incumbnet". Did you mean "incumbent"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "a" {
  target = target.incumbnet
}
