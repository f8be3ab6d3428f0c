# want: "Incorrect attribute value type" line 8 col 12
# detail: target must be a target reference such as target.candidate, not the string "candidat". Did you mean "candidate"?
campaign "c" {}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
}
step "deploy" "candidate" {
  target = "candidat"
}
