# want: "Missing required argument" line 9
# detail: The argument "endpoint" is required
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
target "incumbent" {
  container = "glm53"
}
