// Package build is the build step type: it builds an image through the Docker
// Engine API of a host from a context directory, beside live inference. The build
// runs under the plan's CPU and memory limits (cpus = 2, memory = "8GiB" in seed
// 001), is labelled rigor.inputs_sha256 = the step's input hash (plus any declared
// labels), and outputs image_id and context_sha256.
//
// Input hashing: the context is sent as a deterministic tar (sorted, zero times, no
// owners) whose sha256 is the context_sha256 output and lands in build.json. When the
// context path is absolute, the step also lists the context's files to the engine
// (engine.FileInputs), so their content is part of the input hash before the build
// starts; a relative context is resolved against the campaign directory at run time,
// which FileInputs cannot see, so there the tar hash is the record.
//
// Invariants: a build never touches a container (the legacy builder's intermediate
// containers are its own, limited and removed). A context directory that does not
// exist is a config failure naming it. Out of scope: BuildKit sessions, pulls (no
// registry is consulted: FROM names a local image or scratch), .dockerignore.
package build
