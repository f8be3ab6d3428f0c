# want: "Missing campaign block" line 1
step "exec" "a" {
  command = ["true"]
}
