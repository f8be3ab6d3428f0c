# want: "Invalid for_each argument" line 10
# detail: for_each must be a map, an object, or a set of strings; got number.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  for_each = 3
  command  = ["true"]
}
