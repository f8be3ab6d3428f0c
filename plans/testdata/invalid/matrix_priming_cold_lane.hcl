# want: "Priming a cold lane" line 21
# detail: The workload of cell c1 has fresh_prefixes = true: every repetition sends new prompts, so a priming block would warm prompts no measured block sends.
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
workload "cold" {
  fresh_prefixes = true
}

matrix "m" {
  workload    = workload.cold
  concurrency = [1]
  requests    = 8
  repetitions = 3
  priming     = true
  arm "a" {
    target = target.incumbent
  }
}
