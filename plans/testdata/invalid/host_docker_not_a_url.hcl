# want: "Invalid value" line 10 col 12
# detail: docker host "docker.sock"
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
host "h" {
  docker = "docker.sock"
}
