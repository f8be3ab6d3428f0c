# want: "Invalid during" line 11 col 13
# detail: exec.setup is not a block: a capture runs during a block of requests.
campaign "c" {}
step "exec" "setup" {
  command = ["true"]
}
step "exec" "capture" {
  command = ["capture"]
  # names an exec step where a block of requests belongs
  uses    = ["trace"]
  during  = step.exec.setup
}
