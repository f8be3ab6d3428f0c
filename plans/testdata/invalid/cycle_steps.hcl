# want: "Dependency cycle" line 14
# detail: step.exec.a refers to step.exec.b at
# detail: step.exec.b refers to step.exec.a at
campaign "c" {
  outage {
    budget  = "90m"
    reserve = "20m"
  }
}
step "exec" "a" {
  command = [tostring(step.exec.b.exit_code)]
}
step "exec" "b" {
  command = [tostring(step.exec.a.exit_code)]
}
