# want: "Reference to \"each\" in context without for_each" line 9
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = [each.key]
}
