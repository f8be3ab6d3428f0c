# want: "Incorrect attribute value type" line 9 col 14
# types: steps
# detail: target must be a target reference such as target.flare, not the string "flare". Did you mean target.flare?
campaign "c" {}
target "flare" {
  endpoint = "http://127.0.0.1:8000"
}
step "trace" "capture" {
  target   = "flare"
  duration = "1s"
  ranks    = [0]
}
