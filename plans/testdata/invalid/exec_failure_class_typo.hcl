# want: "Invalid value" line 7 col 19
# types: steps
# detail: failure_class: "gatee" is not one of "identity", 
# detail: Did you mean "gate"?
campaign "c" {}
step "exec" "check" {
  failure_class = "gatee"
  command       = ["true"]
}
