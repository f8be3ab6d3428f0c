# want: "Unknown cell" line 24
# detail: primary_cells names "c64", but matrix "primary" runs no such concurrency.
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
  arm "incumbent_before" {
    target = target.incumbent
  }
  arm "candidate" {
    target = target.candidate
  }
}
decision "promotion" {
  primary_metric = "aggregate_output_tok_s"
  primary_cells  = ["c64"]
  baseline_arm   = "incumbent_before"
  candidate_arm  = "candidate"
  min_gain       = 0.05
}
