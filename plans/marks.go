package plans

import (
	"sort"
	"strings"

	"github.com/zclconf/go-cty/cty"
)

// KnownAfter marks an unknown value with the address of the step whose outputs it
// waits for. Marks propagate through cty operations, so a derived value still says
// which steps it is waiting on.
type KnownAfter string

// sensitiveMark marks values from sensitive variables. They reach steps but never
// canonical JSON, hashes, logs or evidence.
type sensitiveMark struct{}

// Sensitive is the mark carried by sensitive values.
var Sensitive = sensitiveMark{}

// knownAfterOf lists, sorted, the steps an unknown value waits for.
func knownAfterOf(marks cty.ValueMarks) []string {
	var out []string
	for m := range marks {
		if k, ok := m.(KnownAfter); ok {
			out = append(out, string(k))
		}
	}
	sort.Strings(out)
	return out
}

// UnknownText is how an unknown value is shown and canonicalised.
func UnknownText(marks cty.ValueMarks) string {
	after := knownAfterOf(marks)
	if len(after) == 0 {
		return "(known after apply)"
	}
	return "(known after " + strings.Join(after, ", ") + ")"
}

// IsUnknownText reports whether s is how UnknownText shows an unknown value, as a
// plan's JSON carries it.
func IsUnknownText(s string) bool {
	return strings.HasPrefix(s, "(known after ") && strings.HasSuffix(s, ")")
}

// IsWholeKnown reports whether v and everything inside it is known.
func IsWholeKnown(v cty.Value) bool {
	u, _ := v.UnmarkDeep()
	return u.IsWhollyKnown()
}
