# A campaign split over two files in one directory.
campaign "split" {
  outage {
    budget  = "10m"
    reserve = "1m"
  }
}

target "incumbent" {
  endpoint = "http://127.0.0.1:8000"
}
