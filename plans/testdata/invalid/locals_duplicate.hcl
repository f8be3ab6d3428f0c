# want: "Duplicate local value" line 8
# detail: local.scale was already declared at
campaign "c" {}
locals {
  scale = 2
}
locals {
  scale = 3
}
