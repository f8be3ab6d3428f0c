// Package steps wires the step types into one registry for the CLI. Each step type
// lives in its own package beside this one (exec, freeze, block, deploy, restore);
// the backends they share nest under steps/internal.
package steps
