# want: "Reference to undeclared local value" line 12
# detail: There is no local value named "endpiont". Did you mean "endpoint"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
locals {
  endpoint = "http://127.0.0.1:8000"
}
target "incumbent" { endpoint = local.endpiont }
