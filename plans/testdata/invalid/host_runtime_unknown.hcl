# want: "Invalid value" line 10 col 13
# detail: "podman" is not a runtime: want "docker", "kubernetes" or "sim".
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "h" {
  runtime = "podman"
}
