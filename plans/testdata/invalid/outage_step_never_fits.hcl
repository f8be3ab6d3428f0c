# want: "Step does not fit in the outage" line 24
# detail: exec.long runs inside the outage and may take 8s (its hard bound), but the budget 10s less the reserve 3s leaves 7s
campaign "c" {
  outage {
    budget  = "10s"
    reserve = "3s"
  }
}

step "exec" "open" {
  command = ["true"]
  outage  = "begin"
  timeout = "1s"
}

# Outside the outage (it waits on nothing inside it): any bound is allowed.
step "exec" "before" {
  command = ["true"]
  timeout = "1h"
}

# Waits on the step that opens the outage, so it runs inside it; 8s never fits in
# the 7s before the reserve, at any apply.
step "exec" "long" {
  command    = ["true"]
  timeout    = "8s"
  depends_on = [step.exec.open]
}

step "exec" "restore" {
  command = ["true"]
  always  = true
  outage  = "end"
  timeout = "3s"
}
