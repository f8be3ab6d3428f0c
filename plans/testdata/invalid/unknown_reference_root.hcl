# want: "Unknown reference" line 10
# detail: References start with var., local., host., target., workload., gate., step., each.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "deploy" "a" {
  target = resource.incumbent
}
