# want: "Invalid sequential" line 10
# detail: sequential orders the instances of a step with for_each or count
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  sequential = true
  command    = ["true"]
}
