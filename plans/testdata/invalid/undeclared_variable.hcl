# want: "Reference to undeclared variable" line 14
# detail: Did you mean "api_key"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
variable "api_key" {
  default = "k"
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
  api_key  = var.api_kye
}
