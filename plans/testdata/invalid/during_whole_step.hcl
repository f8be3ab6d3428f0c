# want: "Invalid during" line 19 col 13
# detail: during must name one block instance, such as step.block.primary["incumbent_before/c4/r1"], not a whole step or another value.
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "load" {
  for_each    = { c1 = 1, c4 = 4 }
  target      = target.t
  workload    = workload.w
  concurrency = each.value
  requests    = 64
}
step "exec" "capture" {
  command = ["capture"]
  uses    = ["trace"]
  # every instance of the block, where one is meant
  during  = step.block.load
}
