# want: "Unsupported argument" line 10
# detail: Valid arguments for workload blocks: api, assert_completion_tokens, assert_prompt_tokens, corpus,
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  max_token = 2048
}
