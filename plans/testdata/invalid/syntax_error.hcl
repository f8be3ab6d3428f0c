# want: "Missing item separator" line 9
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = ["echo" "x"]
}
