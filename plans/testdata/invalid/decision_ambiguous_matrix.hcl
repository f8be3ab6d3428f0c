# want: "Ambiguous decision rule" line 33
# detail: name the one the rule compares, such as matrix = step.block.primary.
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
matrix "extended" {
  workload    = workload.w
  concurrency = [4]
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
  primary_cells  = ["c4"]
  baseline_arm   = "incumbent_before"
  candidate_arm  = "candidate"
  min_gain       = 0.05
}
