# want: "Duplicate step name" line 11
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = ["true"]
}
step "exec" "a" {
  command = ["false"]
}
