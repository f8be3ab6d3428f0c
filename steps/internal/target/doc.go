// Package target reads the target, host and workload objects of a step's evaluated
// configuration into Go values, and holds the runtime operations (inspect, start,
// stop, wait for health) that the identity, deploy, restore and block steps share,
// for both runtimes: "sim" (simulator containers in this process, simruntime.go)
// and "docker" (a Docker Engine through steps/internal/docker, docker.go). Identity
// records of both runtimes have the same shape (docker.Identity), so gates compare
// incarnations the same way whichever runtime serves the target.
package target
