# want: "Incorrect attribute value type" line 16 col 14
# detail: api_key: Want a string
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
variable "key" {
  type      = number
  default   = 123456
  sensitive = true
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  api_key  = var.key
}
