# want: "Invalid value" line 11 col 9
# detail: "chats" is not an API
# detail: Did you mean "chat"?
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
workload "w" {
  api = "chats"
}
