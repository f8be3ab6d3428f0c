// Package restore is the restore step type, meant to be marked always = true: it
// stops whatever else serves the incumbent's endpoint, starts the exact incumbent
// container again by ID (or recreates it from its recorded spec when it is gone),
// verifies the image identity and health, and writes a restore receipt with the
// outage duration against its budget.
//
// On docker, the incumbent is found without the journal and without depending on a
// deploy's outputs (a failed deploy has none, and restore must still run): the
// newest docker restore-manifest.json under <state>/attempts whose recorded container
// name is the target's container and whose host is the target's engine. That
// manifest names the exact container ID and image ID. Restore starts that container
// by ID if it still exists, else recreates it from the manifest's inspect (exact
// image ID; redacted env values come from the target's env), verifies the same
// container and image ID, waits for health, re-hashes the protected files (an
// unreadable one is named), and writes receipt.json whatever the outcome. With no
// manifest (nothing was displaced), the target's container by name is the incumbent.
package restore
