// Package restore is the restore step type, meant to be marked always = true: it
// stops whatever else serves the incumbent's endpoint, starts the exact incumbent
// container again by ID (or recreates it from its recorded spec when it is gone),
// verifies the image identity and health, and writes a restore receipt with the
// outage duration against its budget.
package restore
