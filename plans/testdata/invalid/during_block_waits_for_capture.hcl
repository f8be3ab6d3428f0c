# want: "Invalid during" line 18 col 13
# detail: block.load waits for exec.capture, so exec.capture cannot run during it.
campaign "c" {}
target "t" {
  endpoint = "http://127.0.0.1:8000"
}
workload "w" {}
step "block" "load" {
  target      = target.t
  workload    = workload.w
  concurrency = 4
  requests    = 64
  depends_on  = [step.exec.capture]
}
step "exec" "capture" {
  command = ["capture"]
  uses    = ["trace"]
  during  = step.block.load
}
