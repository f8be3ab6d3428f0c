# want: "Invalid value" line 12 col 14
# detail: "vlm" is not an engine
# detail: Did you mean "vllm"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "t" {
  endpoint = "http://127.0.0.1:8000"
  engine   = "vlm"
}
