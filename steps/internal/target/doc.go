// Package target reads the target, host and workload objects of a step's evaluated
// configuration into Go values, and holds the runtime operations (start, stop,
// inspect, wait for health) that the deploy, restore and block steps share. Only the
// simulator runtime lives here for now; the Docker runtime plugs in beside it.
package target
