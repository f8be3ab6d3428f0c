// Package identity is the identity step type: it inspects a target's container on
// its runtime (docker or sim) and compares what runs with what the plan expects —
// the image ID (target image = "sha256:…", or the ID its reference or simulator
// profile resolves to), and optionally an exact container ID or incarnation. It
// keeps identity.json (and, for docker, the full inspect.json) as evidence and
// outputs the identity record. Any mismatch, a missing container, a container that
// is not running or that was OOM-killed is the stop-class failure "identity" ("oom"
// for the last). Its outputs carry the endpoint too, so that a later block on the
// same endpoint holds the container to this record (steps/block). identity.json
// also keeps the sha256 of the target's protected_files; an unreadable one is the
// failure "config".
//
// The step implements engine.Refresher (a resumed apply re-inspects the target and
// compares container, image and incarnation with the recorded outputs) and
// engine.PinnedInputs (the target's protected files, as "file <path>").
//
// Out of scope: starting or changing anything; identity only looks.
package identity
