# want: "No value for required variable" line 9
# detail: Set it with --var api_key=..., --var-file, or the environment variable RIGOR_VAR_api_key.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
variable "api_key" {
  sensitive = true
}
