package plans

import (
	"sort"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/zclconf/go-cty/cty"
)

// StepType is what the language needs to know about a step type: the schema of its
// body and the type of the outputs it produces. The engine's Step interface extends
// it with execution; the language never runs anything.
type StepType interface {
	// Spec is the strict schema of the type-specific attributes of a step body.
	Spec() hcldec.ObjectSpec
	// OutputType is the object type of the values the step produces. References to
	// them are unknown values of this type until the step has run.
	OutputType() cty.Type
}

// MatrixArguments is implemented by a step type whose schema holds arguments only a
// matrix sets, for the blocks it expands into; a step block of the type may not set
// them, since nothing would read what it wrote.
type MatrixArguments interface {
	MatrixArguments() []string
}

// StepTypes looks step types up by name.
type StepTypes map[string]StepType

// Names returns the registered type names, sorted.
func (r StepTypes) Names() []string {
	names := make([]string, 0, len(r))
	for n := range r {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
