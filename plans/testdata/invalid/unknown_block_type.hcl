# want: "Unsupported block type" line 9
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}

resource "docker" "x" {
}
