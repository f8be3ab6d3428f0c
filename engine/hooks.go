package engine

import (
	"context"

	"github.com/zclconf/go-cty/cty"
)

// PinnedInputs is implemented by step types whose inputs must stay exactly what they
// were when first seen: a rendered corpus, the protected files of a target. Before
// every start of such a step the engine asks for the digests of those inputs, by name
// (for example "corpus workload.capacity s4342 c4 main" or "file fixtures/discovery.json"). The
// first digest recorded under a name pins it (the plan_frozen record pins every
// campaign.frozen file as "file <path>"); a later start that reports another digest
// under the same name fails with the stop-class frozen_input_changed before the step
// runs. An always-step (restore) still runs and fails afterwards, naming both digests.
// The digests seen are recorded in the step_start record and passed to the step in
// StepContext.Pinned.
type PinnedInputs interface {
	PinnedInputs(config cty.Value, baseDir string) (map[string]string, error)
}

// Refresher is implemented by step types that leave something running in the world
// (a deployed target). Before a resumed apply schedules anything, the engine re-reads
// the world as Terraform refreshes state: for each key it calls Refresh once, for the
// latest instance under that key that succeeded, with its configuration and the
// outputs the journal recorded. An error means the world no longer matches the
// journal; the engine records it as class identity and never reuses the target.
type Refresher interface {
	// RefreshKey names what an instance put in place (the endpoint a target serves,
	// say); only the latest succeeded instance per key is refreshed.
	RefreshKey(config cty.Value) string
	Refresh(ctx context.Context, config, outputs cty.Value) error
}

// RerunSafe is implemented by step types that may run again after an interrupted
// attempt without changing what the evidence means (they compute or read, and send
// nothing that is measured). Other steps are re-run only when the plan declares
// rerun_safe = true.
type RerunSafe interface {
	RerunSafe() bool
}

// Placer relates steps to what they run against, so a held campaign that continues
// knows which deploy to run again before a remaining block: the step types that put
// a target in place (deploy, identity, restore) name it with Places, and the step
// types that run against one (block, trace, nsys) name it with RunsAgainst. The
// names are opaque to the engine; equal names mean the same thing.
type Placer interface {
	Places(config cty.Value) string
}

// RunsAgainst is the other side of Placer.
type RunsAgainst interface {
	RunsAgainst(config cty.Value) string
}
