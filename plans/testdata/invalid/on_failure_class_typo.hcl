# want: "Unknown failure class" line 10 col 18
# types: steps
# detail: on_failure names class "helth", which no step fails with. Did you mean "health"?
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "d" {
  target     = target.t
  on_failure = { helth = "hold" }
}
