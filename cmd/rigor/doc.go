// Command rigor runs measurement campaigns on LLM serving stacks: it validates,
// shows, graphs, applies and amends HCL campaign plans, reports status, verifies the
// evidence of a state directory, and serves the built-in simulator.
//
// stdout carries results; logs and progress go to stderr.
package main
