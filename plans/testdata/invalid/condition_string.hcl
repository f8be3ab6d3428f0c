# want: "Invalid condition" line 9 col 15
# detail: A condition must be true or false, and this one is a string.
campaign "c" {}
step "exec" "y" {
  command = ["true"]
}
step "exec" "z" {
  command   = ["true"]
  condition = "yes"
}
