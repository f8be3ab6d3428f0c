// Package target reads the target, host and workload objects of a step's evaluated
// configuration into Go values, and holds the runtime operations (inspect, start,
// stop, wait for health) that the identity, deploy, restore and block steps share,
// for both runtimes: "sim" (simulator containers in this process, simruntime.go)
// and "docker" (a Docker Engine through steps/internal/docker, docker.go). Identity
// records of both runtimes have the same shape (docker.Identity), so gates compare
// incarnations the same way whichever runtime serves the target.
//
// A target names its serving engine (engine.go): the engine's preset gives the native
// metric names every block reads (promscrape.Names), each overridable by a *_metric
// attribute, and cache_reset declares the call that empties the engine's prefix cache.
package target
