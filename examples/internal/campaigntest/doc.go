// Package campaigntest reads what a `rigor plan apply` left in a state directory,
// for the example tests that apply campaigns against real runtimes (Docker,
// Kubernetes): the journal, a step's last end record and its outputs, a record's
// sequence number, a JSON file; and it hands out loopback ports for the targets
// those campaigns start.
package campaigntest
