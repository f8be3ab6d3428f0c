# want: "Incorrect attribute value type" line 23
# detail: promotion must be true
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
  promotion      = "no"
  primary_metric = "aggregate_output_tok_s"
  primary_cells  = ["c4"]
  baseline_arm   = "incumbent_before"
  candidate_arm  = "candidate"
  min_gain       = 0.05
}
