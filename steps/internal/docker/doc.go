// Package docker is the Docker Engine backend shared by the identity, build, deploy
// and restore step types and by the block gates: it connects to the engine a host
// block names (unix://, tcp://, or the environment's DOCKER_HOST when empty), turns
// an inspect into the identity record rigor compares and keeps (container ID, name,
// image ID, created, started, incarnation = ID@StartedAt, restart count, OOMKilled,
// status, health), creates and starts containers from a declared Spec, builds images
// from a deterministic tar of a context directory, and reads and writes the restore
// manifest (a container's full inspect JSON, saved before anything touches it).
//
// Invariants: every engine call is bounded by the caller's context, and connecting
// pings with a short timeout, so an unreachable engine is an error naming its URL,
// never a hang. Error messages name the object (host URL, container, image, port).
// Environment values that look like secrets (names containing KEY, TOKEN, SECRET,
// PASSW or CREDENTIAL, or equal to the target's api_key) never reach evidence: the
// restore manifest redacts them and recreation takes them from the plan again.
//
// Out of scope: ssh:// hosts (github.com/docker/cli's connection helper is not a
// dependency of this build; Connect says so), registries and pulls (images are built
// or already present), swarm services and networks beyond the default bridge.
package docker
