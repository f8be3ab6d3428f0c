// Package restore is the restore step type, meant to be marked always = true: it
// stops whatever else serves the incumbent's endpoint, starts the incumbent
// container again (or recreates it when it is gone), verifies the image identity
// and health, and writes a restore receipt with the outage duration against its
// budget.
//
// On the sim runtime the incumbent is the target's container by name: started
// again if it stopped, recreated from the target's declared spec (the plan's) if it
// is gone; its image is the profile's image ID (or the declared sha256 image).
//
// On docker, the incumbent is found without the journal and without depending on a
// deploy's outputs (a failed deploy has none, and restore must still run): the
// newest docker restore-manifest.json under <state>/attempts whose recorded container
// name is the target's container and whose host is the target's engine. That
// manifest names the exact container ID and image ID. Restore starts that container
// by ID if it still exists and verifies it is that container with that image ID;
// else recreates it from the manifest's inspect (exact image ID; redacted env
// values come from the target's env) and verifies the image ID. It waits for health
// and writes receipt.json whatever the outcome. With no manifest (nothing was
// displaced), the target's container by name is the incumbent.
//
// Protected files (the target's protected_files and the step's) are hashed and
// compared with the digest the engine pinned when each was first seen
// (engine.PinnedInputs, StepContext.Pinned). A changed or unreadable one fails the
// restore's verification with class frozen_input_changed, naming the file (and, when
// it changed, both digests), after the incumbent is back. A file with no pin is recorded under
// not_compared as "first seen at restore, nothing to compare", never as a check.
// The step implements engine.Refresher too.
package restore
