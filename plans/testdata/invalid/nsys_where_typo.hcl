# want: "Invalid value" line 7 col 14
# types: steps
# detail: where: "contaner" is not one of "host", "container" or "simulator". Did you mean "container"?
campaign "c" {}
step "nsys" "profile" {
  duration = "20s"
  where    = "contaner"
  command  = ["python3", "bench.py"]
}
