# want: "Too many matched repetitions" line 30 col 25
# detail: matched_repetitions = 5, but matrix "primary" runs 3 repetition(s) of each cell
campaign "c" {}
target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
target "candidate" {
  endpoint = "http://127.0.0.1:8001"
}
workload "w" {}
matrix "primary" {
  workload    = workload.w
  concurrency = [1, 4]
  requests    = 8
  repetitions = 3
  arm "incumbent" {
    target = target.incumbent
  }
  arm "candidate" {
    target = target.candidate
  }
}
decision "promotion" {
  matrix              = step.block.primary
  primary_metric      = "aggregate_output_tok_s"
  primary_cells       = ["c4"]
  baseline_arm        = "incumbent"
  candidate_arm       = "candidate"
  min_gain            = 0.05
  matched_repetitions = 5
}
