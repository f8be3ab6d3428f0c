# want: "Incorrect attribute value type" line 8 col 12
# detail: target must be a target reference such as target.inc, not the string "inc". Did you mean target.inc?
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
step "restore" "incumbent" {
  target = "inc"
  always = true
}
