// Package freeze is the freeze step type: it evaluates values derived from earlier
// steps (request counts from a pilot, say) and records them. From then on they are
// frozen: later steps read them from the journal, and a resumed apply refuses to go
// on if they would come out differently.
package freeze
