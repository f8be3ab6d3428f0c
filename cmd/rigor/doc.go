/*
Command rigor runs measurement campaigns on LLM serving stacks: it validates, shows,
graphs, applies and amends HCL campaign plans, reports status, verifies and signs the evidence
of a state directory, writes reports, and serves the built-in simulator. `rigor bench`
measures any endpoint outside a campaign with the block step's client, with exit
codes a CI can act on (bench.go: 7 some requests failed, 8 all failed). Every command
exits 2 on a bad flag or argument (main.go), except `plan diff --detailed-exitcode`,
whose 2 means changes, as Terraform's does.

stdout carries results; logs and progress go to stderr. Each command file registers
itself; argument parsing, the command's logic (in engine, plans and steps) and its
rendering stay apart.
*/
package main
