# want: "Invalid on_failure" line 10 col 27
# types: steps
# detail: on_failure must be "stop" (stop the campaign), "stop_arm" (stop this matrix arm), "hold" (restore, then hold for review) or "continue" (record and go on), not "holdd". Did you mean "hold"?
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "d" {
  target     = target.t
  on_failure = { health = "holdd" }
}
