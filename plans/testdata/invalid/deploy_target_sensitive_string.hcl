# want: "Incorrect attribute value type" line 12 col 12
# detail: target must be a target reference such as target.inc, not a sensitive string.
variable "t" {
  sensitive = true
  default   = "hunter2"
}
campaign "c" {}
target "inc" {
  endpoint = "http://127.0.0.1:8000"
}
step "deploy" "d" {
  target = var.t
}
