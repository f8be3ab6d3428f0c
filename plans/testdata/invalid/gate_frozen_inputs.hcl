# want: "Unsupported argument" line 10 col 3
# detail: campaign { frozen = [...] }
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
gate "g" {
  frozen_inputs = ["fixtures/oracle.txt"]
}
