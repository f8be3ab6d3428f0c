# want: "Missing required argument" line 6
# detail: The argument "budget" is required
# An outage block without its budget and reserve is a diagnostic (it used to end
# validate with a nil pointer dereference).
campaign "c" {
  outage {}
}
