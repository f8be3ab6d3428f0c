# want: "Invalid for_each argument" line 10
# detail: for_each has the key "x" twice
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  for_each = ["x", "y", "x"]
  command  = ["true"]
}
