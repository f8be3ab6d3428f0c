# want: "Reference of the wrong kind" line 13 col 13
# types: steps
# detail: host names target.node, a target block; it must name a host block such as host.node. Did you mean host.node?
campaign "c" {}
host "node" {
  runtime = "docker"
}
target "node" {
  endpoint = "http://127.0.0.1:8000"
  host     = host.node
}
step "build" "image" {
  host    = target.node
  context = "."
}
