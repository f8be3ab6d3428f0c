# want: "Invalid value" line 14 col 16
# detail: max_tokens: 0 is out of range: want a whole number >= 1.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
variable "cap" {
  type    = number
  default = 0
}
workload "w" {
  max_tokens = var.cap
}
