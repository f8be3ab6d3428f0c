// Package deploy is the deploy step type: it takes the current occupant of a
// target's endpoint out of service (saving its full inspect record first, as the
// restore manifest), then starts the target and waits for its health endpoint within
// a bound. A health timeout is the stop-class failure "health".
//
// Runtimes: "sim" (simulator containers: each a server process of its own that
// outlives the apply, its state in the host's sim_dir) and "docker". On docker,
// the occupant is every running container that publishes the endpoint's host port;
// restore-manifest.json holds its full docker inspect JSON (secret-looking env values
// redacted) and is written before the occupant is stopped. The occupant is stopped,
// never removed, so restore can start the exact container again by ID. The target
// container is created from the declared configuration (image, command, env, ports,
// mounts, shm_size, memory, cpus, gpus as device requests, labels) with restart
// policy "no"; an existing container of that name is reused only if it carries the
// same spec hash (label rigor.spec_sha256) and image ID, else it is replaced. A port
// already taken is a config failure naming the port; a container that exits while
// rigor waits for health is "health" ("oom" when the kernel killed it).
//
// The step implements engine.Refresher (a resumed apply re-inspects the deployed
// target and compares container, image and incarnation with the recorded outputs)
// and engine.PinnedInputs (the target's protected_files, as "file <path>").
package deploy
