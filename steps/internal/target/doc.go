// Package target reads the target, host and workload objects of a step's evaluated
// configuration into Go values, and holds the runtime operations (inspect, start,
// stop, wait for health) that the identity, deploy, restore and block steps share,
// for both runtimes: "sim" (simulator containers, each its own server process, in the
// host's state directory: host attribute sim_dir, default sim.DefaultRoot()/<host>;
// simruntime.go) and "docker" (a Docker Engine through steps/internal/docker,
// docker.go). Identity records of both runtimes have the same shape
// (docker.Identity), so gates compare incarnations the same way whichever runtime
// serves the target.
//
// identity.go holds what a target is held to: the Seen identity (container, image,
// incarnation) that deploy, identity, restore and block record in their outputs, its
// comparison, and the refresh of a recorded identity against the world (Refresh,
// RefreshKey: engine.Refresher for the steps that leave a target running).
// protected.go hashes the protected files under the names the engine pins them by.
// porthint.go says a port that another process holds as the user can act on it: the
// target, the address, and the variable (or the attribute) the port comes from.
//
// A target names its serving engine (engine.go): the engine's preset gives the native
// metric names every block reads (promscrape.Names), each overridable by a *_metric
// attribute, and cache_reset declares the call that empties the engine's prefix cache.
package target
